package io.minato.workload.kits19;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.Shape3;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PreparationTest {

    private static final Shape3 VOLUME = new Shape3(40, 36, 44);

    /** Small steps, so that every sample stops and resumes at many points. */
    private static final TransformConfig CONFIG =
            TransformConfig.mlperf(16).withVoxelsPerStep(3000);

    private static final TransformConfig ONLY_CROP =
            new TransformConfig(Shape3.cube(4), 0, 0, 0.3, 0, 0.1, 0, 1 << 20, 0, 1);

    @Test
    void shouldReturnAPatchOfThePatchShapeWithLabelsFromTheVolume() {
        Volume v = SyntheticVolumes.blobs(VOLUME, 3);
        for (int i = 0; i < 50; i++) {
            Patch p = Preparation.prepare(new SampleKey(7, 0, i), v, CONFIG);
            assertThat(p.shape()).isEqualTo(Shape3.cube(16));
            for (byte b : p.label()) {
                assertThat((int) b).isBetween(0, 2);
            }
        }
    }

    @Test
    void shouldGiveTheBitIdenticalSampleForTheSameKeyAndADifferentOneForAnother() {
        Volume v = SyntheticVolumes.blobs(VOLUME, 4);
        Patch a = Preparation.prepare(new SampleKey(7, 1, 5), v, CONFIG);
        Patch b = Preparation.prepare(new SampleKey(7, 1, 5), v, CONFIG);
        assertThat(a.sameContent(b)).isTrue();
        assertThat(a.sameContent(Preparation.prepare(new SampleKey(7, 2, 5), v, CONFIG))).isFalse();
        assertThat(a.sameContent(Preparation.prepare(new SampleKey(8, 1, 5), v, CONFIG))).isFalse();
    }

    @Test
    void shouldFinishBitIdenticallyWhenResumedFromSerializedStateAfterAnyStep() throws IOException {
        Volume v = SyntheticVolumes.blobs(VOLUME, 5);
        Set<Preparation.Step> stopsSeen = EnumSet.noneOf(Preparation.Step.class);
        for (int i = 0; i < 40; i++) {
            SampleKey key = new SampleKey(11, 0, i);
            Patch expected = Preparation.prepare(key, v, CONFIG);
            int steps = countSteps(key, v);
            for (int stopAfter = 0; stopAfter < steps; stopAfter++) {
                Preparation p = Preparation.start(key);
                for (int k = 0; k < stopAfter; k++) {
                    p.advance(v, CONFIG);
                }
                stopsSeen.add(p.step());
                Preparation resumed = roundTrip(p);
                assertThat(resumed.step()).isEqualTo(p.step());
                while (!resumed.isDone()) {
                    resumed.advance(v, CONFIG);
                }
                assertThat(resumed.result().sameContent(expected))
                        .as("key %s resumed after %d of %d steps", key, stopAfter, steps)
                        .isTrue();
            }
        }
        // TAIL only runs with the bench's tail knob (its own test).
        assertThat(stopsSeen)
                .containsAll(
                        EnumSet.complementOf(
                                EnumSet.of(Preparation.Step.DONE, Preparation.Step.TAIL)));
    }

    @Test
    void shouldGiveTheSameBytesWhetherTheCaseMemoKnowsTheComponentsOrNot() throws IOException {
        Volume none = SyntheticVolumes.blobs(VOLUME, 6);
        Memo memo = new Memo();
        Volume remembering = none.withMemo(memo);
        Set<Preparation.Step> stopsSeen = EnumSet.noneOf(Preparation.Step.class);
        for (int i = 0; i < 40; i++) {
            SampleKey key = new SampleKey(13, 0, i);
            Patch expected = Preparation.prepare(key, none, CONFIG);
            // The first foreground sample scans and hands its result to the memo; the rest skip
            // the scan. Each is also stopped after every step and resumed from its bytes.
            int scans = memo.remembered;
            assertThat(Preparation.prepare(key, remembering, CONFIG).sameContent(expected))
                    .as("key %s, memo %s", key, scans == 0 ? "cold" : "warm")
                    .isTrue();
            int steps = countSteps(key, remembering);
            for (int stopAfter = 0; stopAfter < steps; stopAfter++) {
                Preparation p = Preparation.start(key);
                for (int k = 0; k < stopAfter; k++) {
                    p.advance(remembering, CONFIG);
                }
                stopsSeen.add(p.step());
                Preparation resumed = roundTrip(p);
                while (!resumed.isDone()) {
                    resumed.advance(remembering, CONFIG);
                }
                assertThat(resumed.result().sameContent(expected))
                        .as("key %s resumed after %d of %d steps", key, stopAfter, steps)
                        .isTrue();
            }
        }
        assertThat(memo.remembered).as("scans handed to the memo").isEqualTo(1);
        assertThat(stopsSeen).contains(Preparation.Step.PICK).doesNotContain(Preparation.Step.SCAN);
    }

    /** The bench's tail knob adds work to a deterministic fraction of samples, never bytes. */
    @Test
    void shouldMakeAFractionOfSamplesHeavyWithoutChangingAnyByte() throws IOException {
        Volume v = SyntheticVolumes.blobs(VOLUME, 12);
        TransformConfig tail = CONFIG.withTail(0.3, 4);
        int n = 400;
        int heavy = 0;
        for (int i = 0; i < n; i++) {
            SampleKey key = new SampleKey(17, 1, i);
            Preparation plain = run(key, v, CONFIG);
            Preparation loaded = run(key, v, tail);
            assertThat(loaded.result().sameContent(plain.result())).as("key %s", key).isTrue();
            if (loaded.tailSink() != 0) {
                heavy++;
            }
        }
        assertThat(heavy / (double) n).isCloseTo(0.3, within(0.07));

        // Resumable inside the extra work too, with the same result.
        Set<Preparation.Step> stopsSeen = EnumSet.noneOf(Preparation.Step.class);
        for (int i = 0; i < 12; i++) {
            SampleKey key = new SampleKey(17, 1, i);
            Preparation whole = run(key, v, tail);
            Preparation p = Preparation.start(key);
            int steps = 0;
            while (!p.isDone()) {
                p = roundTrip(p);
                stopsSeen.add(p.step());
                p.advance(v, tail);
                steps++;
            }
            assertThat(p.result().sameContent(whole.result())).isTrue();
            assertThat(p.tailSink()).isEqualTo(whole.tailSink());
        }
        assertThat(stopsSeen).contains(Preparation.Step.TAIL);
    }

    private static Preparation run(SampleKey key, Volume v, TransformConfig config) {
        Preparation p = Preparation.start(key);
        while (!p.isDone()) {
            p.advance(v, config);
        }
        return p;
    }

    @Test
    void shouldNotDependOnHowFinelyTheHeavyStepsAreSplit() {
        Volume v = SyntheticVolumes.blobs(VOLUME, 6);
        // Every branch taken: foreground crop, brightness and noise on every sample.
        TransformConfig always =
                new TransformConfig(Shape3.cube(16), 1, 1.0 / 3, 0.3, 1, 0.1, 1, 1, 0, 1);
        for (int i = 0; i < 30; i++) {
            SampleKey key = new SampleKey(3, 0, i);
            for (TransformConfig c : new TransformConfig[] {CONFIG, always}) {
                Patch fine = Preparation.prepare(key, v, c.withVoxelsPerStep(1));
                Patch coarse = Preparation.prepare(key, v, c.withVoxelsPerStep(1L << 30));
                assertThat(fine.sameContent(coarse)).as("key %s, %s", key, c).isTrue();
            }
        }
    }

    @Test
    void shouldSplitTheForegroundScanIntoStepsOfBoundedSize() {
        Volume v = SyntheticVolumes.blobs(VOLUME, 7);
        TransformConfig config =
                TransformConfig.mlperf(16).withOversampling(1).withVoxelsPerStep(36 * 44 * 4);
        Preparation p = Preparation.start(new SampleKey(1, 0, 0));
        int scans = 0;
        while (!p.isDone()) {
            if (p.step() == Preparation.Step.SCAN) {
                scans++;
            }
            p.advance(v, config);
        }
        assertThat(scans).isEqualTo(10); // 40 slices, 4 per step
    }

    @Test
    void shouldAlwaysHoldForegroundInAForegroundCropEvenWhenTheComponentExceedsThePatch() {
        // One large hollow-ish kidney whose box is far larger than the 8^3 patch.
        Shape3 s = new Shape3(48, 48, 48);
        byte[] label = new byte[(int) s.voxels()];
        for (int z = 0; z < 48; z++) {
            for (int y = 0; y < 48; y++) {
                for (int x = 0; x < 48; x++) {
                    double r =
                            Math.sqrt(
                                    (z - 24) * (z - 24)
                                            + (y - 24) * (y - 24)
                                            + (x - 24) * (x - 24));
                    if (r <= 23 && r >= 20) {
                        label[(z * 48 + y) * 48 + x] = 1;
                    }
                }
            }
        }
        Volume v = Volume.of("shell", s, new float[(int) s.voxels()], label);
        TransformConfig config = TransformConfig.mlperf(8).withOversampling(1);
        for (int i = 0; i < 200; i++) {
            Patch p = Preparation.prepare(new SampleKey(5, 0, i), v, config);
            assertThat(countNonZero(p.label())).as("sample %d", i).isPositive();
        }
    }

    @Test
    void shouldPadAVolumeSmallerThanThePatchWithItsEdgeValues() {
        Shape3 small = new Shape3(2, 3, 4);
        Volume v = SyntheticVolumes.coordinates(small, (byte) 1);
        TransformConfig config =
                new TransformConfig(new Shape3(4, 5, 8), 0, 0, 0.3, 0, 0.1, 0, 1 << 20, 0, 1);
        Patch p = Preparation.prepare(new SampleKey(1, 0, 0), v, config);
        assertThat(p.shape()).isEqualTo(new Shape3(4, 5, 8));
        // Centred padding: offsets (1, 1, 2); edge mode repeats the border voxels.
        for (int z = 0; z < 4; z++) {
            for (int y = 0; y < 5; y++) {
                for (int x = 0; x < 8; x++) {
                    int sz = Math.min(1, Math.max(0, z - 1));
                    int sy = Math.min(2, Math.max(0, y - 1));
                    int sx = Math.min(3, Math.max(0, x - 2));
                    assertThat(p.image()[(z * 5 + y) * 8 + x]).isEqualTo(100f * sz + 10f * sy + sx);
                }
            }
        }
    }

    @Test
    void shouldCropAWindowOfTheVolumeUnchangedWhenNoAugmentationApplies() {
        Volume v = SyntheticVolumes.coordinates(new Shape3(9, 9, 9), (byte) 0);
        for (int i = 0; i < 20; i++) {
            Patch p = Preparation.prepare(new SampleKey(2, 0, i), v, ONLY_CROP);
            float o = p.image()[0];
            int z = (int) o / 100, y = (int) o / 10 % 10, x = (int) o % 10;
            assertThat(z).isBetween(0, 4); // randrange(9 - 4): 0..4
            for (int k = 0; k < 64; k++) {
                assertThat(p.image()[k])
                        .isEqualTo(100f * (z + k / 16) + 10f * (y + k / 4 % 4) + x + k % 4);
            }
        }
    }

    @Test
    void shouldChooseAForegroundCropWithProbabilityZeroPointFour() {
        Volume v = SyntheticVolumes.blobs(VOLUME, 8);
        TransformConfig config = TransformConfig.mlperf(8);
        int n = 3000;
        int foreground = 0;
        for (int i = 0; i < n; i++) {
            Preparation p = Preparation.start(new SampleKey(9, 0, i));
            p.advance(v, config);
            if (p.isForegroundCrop()) {
                foreground++;
            }
        }
        assertThat(foreground / (double) n).isCloseTo(0.4, within(0.03));
    }

    @Test
    void shouldNameEachStepByItsMlperfTransformAndEachSampleByItsKindOfCrop() {
        Volume v = SyntheticVolumes.blobs(VOLUME, 8);
        Set<String> variants = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            Preparation p = Preparation.start(new SampleKey(9, 0, i));
            assertThat(p.variant()).as("before the crop is drawn").isNull();
            while (!p.isDone()) {
                String named = p.stepName();
                assertThat(named).isEqualTo(p.advance(v, CONFIG).label());
            }
            variants.add(p.variant());
        }
        assertThat(variants).containsExactlyInAnyOrder("foreground-centred crop", "uniform crop");
    }

    @Test
    void shouldFlipEachAxisWithProbabilityOneThirdAndImageAndLabelTogether() {
        // A 4^3 volume cropped whole: the first voxel tells which axes were flipped.
        Shape3 s = Shape3.cube(4);
        float[] image = new float[64];
        byte[] label = new byte[64];
        for (int i = 0; i < 64; i++) {
            image[i] = 100 * (i / 16) + 10 * (i / 4 % 4) + i % 4;
            label[i] = (byte) (i % 3);
        }
        Volume v = Volume.of("coords", s, image, label);
        TransformConfig config = new TransformConfig(s, 0, 1.0 / 3, 0.3, 0, 0.1, 0, 1 << 20, 0, 1);
        int n = 3000;
        int[] flips = new int[3];
        for (int i = 0; i < n; i++) {
            Patch p = Preparation.prepare(new SampleKey(4, 0, i), v, config);
            int first = (int) p.image()[0];
            boolean[] flipped = {first / 100 == 3, first / 10 % 10 == 3, first % 10 == 3};
            for (int k = 0; k < 64; k++) {
                int z = flipped[0] ? 3 - k / 16 : k / 16;
                int y = flipped[1] ? 3 - k / 4 % 4 : k / 4 % 4;
                int x = flipped[2] ? 3 - k % 4 : k % 4;
                int src = (z * 4 + y) * 4 + x;
                assertThat(p.image()[k]).isEqualTo(image[src]);
                assertThat(p.label()[k]).isEqualTo(label[src]);
            }
            for (int a = 0; a < 3; a++) {
                flips[a] += flipped[a] ? 1 : 0;
            }
        }
        for (int a = 0; a < 3; a++) {
            assertThat(flips[a] / (double) n).as("axis %d", a).isCloseTo(1 / 3.0, within(0.03));
        }
    }

    @Test
    void shouldScaleBrightnessByOnePlusAFactorInRangeWithProbabilityZeroPointOne() {
        Volume v = SyntheticVolumes.constant(Shape3.cube(6), 1f, (byte) 1);
        TransformConfig config =
                new TransformConfig(Shape3.cube(4), 0, 0, 0.3, 0.1, 0.1, 0, 1 << 20, 0, 1);
        int n = 4000;
        int scaled = 0;
        for (int i = 0; i < n; i++) {
            Patch p = Preparation.prepare(new SampleKey(6, 0, i), v, config);
            float f = p.image()[0];
            for (float x : p.image()) {
                assertThat(x).isEqualTo(f); // one factor for the whole patch
            }
            if (f != 1f) {
                scaled++;
                assertThat(f).isBetween(1.7f, 2.3f);
            }
        }
        assertThat(scaled / (double) n).isCloseTo(0.1, within(0.02));
    }

    @Test
    void shouldAddZeroMeanNoiseOfStdBelowZeroPointOneWithProbabilityZeroPointOne() {
        Volume v = SyntheticVolumes.constant(new Shape3(12, 12, 12), 0f, (byte) 1);
        TransformConfig config =
                new TransformConfig(Shape3.cube(10), 0, 0, 0.3, 0, 0.1, 0.1, 1 << 20, 0, 1);
        int n = 2000;
        int noisy = 0;
        double maxStd = 0;
        for (int i = 0; i < n; i++) {
            Patch p = Preparation.prepare(new SampleKey(12, 3, i), v, config);
            double sum = 0;
            double sq = 0;
            for (float x : p.image()) {
                sum += x;
                sq += x * x;
            }
            if (sq > 0) {
                noisy++;
                double mean = sum / 1000;
                double std = Math.sqrt(sq / 1000 - mean * mean);
                assertThat(Math.abs(mean)).isLessThan(4 * std / Math.sqrt(1000) + 1e-6);
                maxStd = Math.max(maxStd, std);
            }
        }
        assertThat(noisy / (double) n).isCloseTo(0.1, within(0.02));
        assertThat(maxStd).isBetween(0.07, 0.11);
    }

    @Test
    void shouldCarryOnlyTheScanStateNotTheVolumeBeforeTheCrop() throws IOException {
        Volume v = SyntheticVolumes.blobs(new Shape3(64, 64, 64), 9);
        TransformConfig config =
                TransformConfig.mlperf(32).withOversampling(1).withVoxelsPerStep(64 * 64 * 8);
        Preparation p = Preparation.start(new SampleKey(1, 0, 0));
        p.advance(v, config); // START
        p.advance(v, config); // first scan slab
        assertThat(p.step()).isEqualTo(Preparation.Step.SCAN);
        assertThat(serialize(p).length)
                .isLessThan(64 * 64 * 2); // a run-length slice, not 1 MiB of volume
    }

    /** A memo in memory that counts what it was given. */
    private static final class Memo implements CaseMemo {
        volatile List<Component> components;
        volatile int remembered;

        @Override
        public List<Component> foregroundComponents() {
            return components;
        }

        @Override
        public void rememberForegroundComponents(List<Component> c) {
            components = c;
            remembered++;
        }
    }

    private static int countSteps(SampleKey key, Volume v) {
        Preparation p = Preparation.start(key);
        int steps = 0;
        while (!p.isDone()) {
            p.advance(v, CONFIG);
            steps++;
        }
        return steps;
    }

    /** A state of another format or with no such step is refused in one line, not misread. */
    @Test
    void shouldRefuseAStateOfAnotherFormatOrAStepThatIsNone() throws IOException {
        byte[] state = serialize(Preparation.start(new SampleKey(3, 1, 7)));
        byte[] format = state.clone();
        format[0] = 9;
        assertThatThrownBy(
                        () ->
                                Preparation.readFrom(
                                        new DataInputStream(new ByteArrayInputStream(format))))
                .isInstanceOf(IOException.class)
                .hasMessage("unknown preparation state format 9");
        byte[] step = state.clone();
        step[1 + 8 + 4 + 8] = (byte) 200; // after the format and the key
        assertThatThrownBy(
                        () ->
                                Preparation.readFrom(
                                        new DataInputStream(new ByteArrayInputStream(step))))
                .isInstanceOf(IOException.class)
                .hasMessage("corrupt preparation state: step 200");
    }

    private static int countNonZero(byte[] label) {
        int n = 0;
        for (byte b : label) {
            n += b != 0 ? 1 : 0;
        }
        return n;
    }

    private static byte[] serialize(Preparation p) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        p.writeTo(new DataOutputStream(bytes));
        return bytes.toByteArray();
    }

    private static Preparation roundTrip(Preparation p) throws IOException {
        return Preparation.readFrom(new DataInputStream(new ByteArrayInputStream(serialize(p))));
    }
}
