package io.minato.sample.serde;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.Shape3;
import io.minato.workload.kits19.MlperfTransforms;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.TransformConfig;
import io.minato.workload.kits19.Volume;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.testutils.DeeplyEqualsChecker;

/** Sample values for the serializer tests, and content equality for types without equals. */
final class SampleFixtures {
    private SampleFixtures() {}

    static final Shape3 VOLUME = new Shape3(20, 18, 22);

    /**
     * Always a foreground crop, and a slice per step, so that a preparation stops mid-scan;
     * brightness and noise on every sample, so that the steps after the crop change the patch.
     */
    static final TransformConfig CONFIG =
            new TransformConfig(Shape3.cube(8), 1, 1.0 / 3, 0.3, 1, 0.1, 1, 400, 0, 1);

    static final MlperfTransforms TRANSFORMS = new MlperfTransforms(CONFIG);

    /** A volume with two labelled boxes (a kidney holding a tumour) and a ramp image. */
    static Volume volume() {
        Shape3 s = VOLUME;
        float[] image = new float[(int) s.voxels()];
        byte[] label = new byte[(int) s.voxels()];
        for (int z = 0, i = 0; z < s.d(); z++) {
            for (int y = 0; y < s.h(); y++) {
                for (int x = 0; x < s.w(); x++, i++) {
                    image[i] = 0.01f * i;
                    boolean kidney = z >= 4 && z < 14 && y >= 3 && y < 12 && x >= 5 && x < 15;
                    boolean tumour = z >= 7 && z < 10 && y >= 6 && y < 9 && x >= 8 && x < 11;
                    label[i] = (byte) (tumour ? 2 : kidney ? 1 : 0);
                }
            }
        }
        return Volume.of("two-boxes", s, image, label);
    }

    static SampleTask task(long index) {
        return new SampleTask(42, 3, index, (int) (index % 7));
    }

    static Patch patch(Shape3 shape, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int n = (int) shape.voxels();
        float[] image = new float[n];
        byte[] label = new byte[n];
        for (int i = 0; i < n; i++) {
            image[i] = (float) r.nextGaussian();
            label[i] = (byte) r.nextInt(3);
        }
        // Values whose bits a careless float path could lose.
        image[0] = Float.NaN;
        image[n - 1] = -0.0f;
        if (n > 2) {
            image[1] = Float.MIN_VALUE;
            image[2] = Float.NEGATIVE_INFINITY;
        }
        return new Patch(shape, image, label);
    }

    static PreparedSample prepared(long index, SamplePath path, Shape3 shape) {
        return new PreparedSample(
                task(index), path, 1_000_000L * index + 17, patch(shape, index), (int) (index % 3));
    }

    /** A preparation run until {@code stop} is the next step (and, for SCAN, one slab in). */
    static Preparation preparationAt(long index, Preparation.Step stop) {
        Volume v = volume();
        Preparation p = Preparation.start(new SampleKey(42, 3, index), CONFIG);
        boolean scanned = false;
        while (p.step() != stop || (stop == Preparation.Step.SCAN && !scanned)) {
            scanned |= p.step() == Preparation.Step.SCAN;
            p.advance(v, CONFIG);
        }
        return p;
    }

    static UnfinishedSample unfinished(long index, Preparation.Step stop) {
        return new UnfinishedSample(
                task(index),
                preparationAt(index, stop),
                5_000L + index,
                UnfinishedSample.ANY_SLOW_WORKER);
    }

    /** Where the slow path resumes an unfinished sample, as it does: steps, state, or the start. */
    static Preparation resumed(UnfinishedSample u) {
        if (u.steps() != null) {
            return (Preparation) u.steps();
        }
        if (u.state() == null) {
            return Preparation.start(u.task().key(), CONFIG);
        }
        try {
            return (Preparation) TRANSFORMS.read(new DataInputDeserializer(u.state()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code batch} as a loader hands it out after holding it back for {@code nanos}. */
    static Batch heldBack(Batch batch, long nanos) {
        return new Batch(batch.device(), batch.sequence(), batch.samples(), nanos);
    }

    static Batch batch(int device, long sequence, int size) {
        PreparedSample[] samples = new PreparedSample[size];
        for (int i = 0; i < size; i++) {
            samples[i] =
                    prepared(
                            sequence * size + i,
                            i % 2 == 0 ? SamplePath.FAST : SamplePath.SLOW,
                            new Shape3(3, 4, 5));
        }
        return new Batch(device, sequence, List.of(samples));
    }

    static byte[] bytes(Preparation p) {
        try {
            DataOutputSerializer out = new DataOutputSerializer(256);
            p.writeTo(out);
            return out.getCopyOfBuffer();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Equality by content for every sample type; patches and preparations have no equals. */
    static boolean sameContent(Object a, Object b) {
        if (a instanceof Patch x && b instanceof Patch y) {
            return x.sameContent(y);
        }
        if (a instanceof Preparation x && b instanceof Preparation y) {
            return Arrays.equals(bytes(x), bytes(y));
        }
        if (a instanceof PreparedSample x && b instanceof PreparedSample y) {
            return x.task().equals(y.task())
                    && x.path() == y.path()
                    && x.prepCpuNanos() == y.prepCpuNanos()
                    && x.device() == y.device()
                    && x.patch().sameContent(y.patch());
        }
        if (a instanceof UnfinishedSample x && b instanceof UnfinishedSample y) {
            return x.task().equals(y.task())
                    && x.prepCpuNanos() == y.prepCpuNanos()
                    && sameContent(resumed(x), resumed(y));
        }
        if (a instanceof Batch x && b instanceof Batch y) {
            if (x.device() != y.device()
                    || x.sequence() != y.sequence()
                    || x.heldBackNanos() != y.heldBackNanos()
                    || x.samples().size() != y.samples().size()) {
                return false;
            }
            for (int i = 0; i < x.samples().size(); i++) {
                if (!sameContent(x.samples().get(i), y.samples().get(i))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    /** For {@code SerializerTestBase}, which compares with equals unless told otherwise. */
    static DeeplyEqualsChecker contentChecker() {
        return new DeeplyEqualsChecker()
                .withCustomCheck(
                        (a, b) ->
                                a instanceof Patch
                                        || a instanceof Preparation
                                        || a instanceof PreparedSample
                                        || a instanceof UnfinishedSample
                                        || a instanceof Batch,
                        (a, b, checker) -> sameContent(a, b));
    }
}
