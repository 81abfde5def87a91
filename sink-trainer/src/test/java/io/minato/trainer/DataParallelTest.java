package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Synchronous data parallelism on {@code cpu:2}: two replicas of the real 3D-UNet, each on its own
 * thread and batch, hold identical parameters after every global step, equal within float tolerance
 * to one replica trained on the two batches concatenated.
 */
class DataParallelTest {
    // Momentum, weight decay and Nesterov all on: each enters the update the replicas share.
    private static final TrainingSettings SETTINGS =
            TrainingSettings.builder()
                    .setWidth(0.125)
                    .setLearningRate(0.05f)
                    .optMomentum(0.9f)
                    .optWeightDecay(1e-3f)
                    .optNesterov(true)
                    .optWarmUp(2, 0f)
                    .setSeed(11)
                    .build();

    @Test
    void shouldKeepReplicasIdenticalAndEqualToOneReplicaOnTheConcatenatedBatch() throws Exception {
        // Device 1 runs out of data one step early and its last batch has one sample: the
        // uneven end of an epoch, where nothing may be dropped.
        List<Batch> device0 = List.of(batch(0, 0, 2), batch(0, 1, 2), batch(0, 2, 2));
        List<Batch> device1 = List.of(batch(1, 0, 2), batch(1, 1, 1));
        // One start for all three (replica 1 gets it from replica 0 through the group).
        try (DjlAccelerator single = new DjlAccelerator(SETTINGS);
                TwoReplicas replicas = new TwoReplicas(SETTINGS, single.initializedState())) {
            for (int step = 0; step < 3; step++) {
                Batch b0 = device0.get(step);
                Batch b1 = step < device1.size() ? device1.get(step) : null;
                replicas.step(step + 1, b0, b1);
                single.train(b1 == null ? b0 : concat(b0, b1));
                TwoReplicas.assertClose(replicas.r0, single, step + 1);
                assertThat(replicas.r0.step()).isEqualTo(step + 1);
            }
            // Nobody has data: the group ends for both.
            replicas.end();
        }
    }

    /**
     * Under {@code --on-bad-sample skip} every sample of a replica's batch may be left out: it
     * applies the other replica's update, and a step at which neither had a sample is counted and
     * changes no parameter.
     */
    @Test
    void shouldKeepAReplicaWhoseBatchWentBadIdenticalAndCountAStepWithoutSamples()
            throws Exception {
        try (DjlAccelerator single = new DjlAccelerator(SETTINGS);
                TwoReplicas replicas = new TwoReplicas(SETTINGS, single.initializedState())) {
            replicas.step(1, batch(0, 0, 2), batch(1, 0, 2));
            single.train(concat(batch(0, 0, 2), batch(1, 0, 2)));
            replicas.stepLeavingOut(2, batch(0, 1, 2));
            single.train(batch(0, 1, 2));
            TwoReplicas.assertClose(replicas.r0, single, 2);

            replicas.stepLeavingOut(3, null);
            assertThat(replicas.r0.step()).isEqualTo(3);
            assertThat(replicas.r1.step()).isEqualTo(3);
            TwoReplicas.assertClose(replicas.r0, single, 3);
            replicas.end();
        }
    }

    /**
     * In mixed precision the replicas average their unscaled float32 gradients and apply the same
     * update to the same float32 masters: they stay identical, loss scale included. A batch that
     * overflows float16 on one replica puts an infinity or a NaN into the average, so both skip the
     * step: the masters and the momentum stay as they were, and both scales halve.
     */
    @Test
    void shouldKeepMixedPrecisionReplicasIdentical() throws Exception {
        TrainingSettings half = SETTINGS.withPrecision(Precision.FP16);
        try (DjlAccelerator single = new DjlAccelerator(half);
                TwoReplicas replicas = new TwoReplicas(half, single.initializedState())) {
            assertThat(replicas.r0.precision()).isEqualTo(Precision.FP16);
            replicas.step(1, batch(0, 0, 2), batch(1, 0, 1));
            replicas.step(2, batch(0, 1, 1), batch(1, 1, 2));
            assertThat(replicas.r0.lossScale()).hasValue(LossScaler.INITIAL_SCALE);
            assertThat(replicas.r1.lossScale()).hasValue(LossScaler.INITIAL_SCALE);
            byte[] before = replicas.r0.snapshot();
            replicas.step(3, batch(0, 2, 1), beyondFloat16(batch(1, 2, 1)));
            assertThat(MixedPrecisionTest.arrays(replicas.r1.snapshot()))
                    .isEqualTo(MixedPrecisionTest.arrays(before));
            assertThat(replicas.r0.lossScale()).hasValue(LossScaler.INITIAL_SCALE / 2);
            assertThat(replicas.r1.lossScale()).hasValue(LossScaler.INITIAL_SCALE / 2);
            replicas.end();
        }
    }

    @Test
    void shouldCarryTheMomentumThroughACheckpoint() throws Exception {
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS);
                DjlAccelerator restored = new DjlAccelerator(SETTINGS)) {
            a.train(batch(0, 0, 2));
            restored.restore(a.snapshot());
            Batch next = batch(0, 1, 2);
            a.train(next);
            restored.train(next);
            // Bit-identical only if the momentum (and step, for the warm-up) came back too.
            assertThat(restored.snapshot()).isEqualTo(a.snapshot());
            assertThat(restored.step()).isEqualTo(2);
        }
    }

    /** {@code b} with one voxel beyond float16's largest value (65504): infinite there. */
    private static Batch beyondFloat16(Batch b) {
        PreparedSample first = b.samples().get(0);
        float[] image = first.patch().image().clone();
        image[0] = 1e6f;
        List<PreparedSample> samples = new ArrayList<>(b.samples());
        samples.set(
                0, first.withPatch(new Patch(first.patch().shape(), image, first.patch().label())));
        return new Batch(b.device(), b.sequence(), samples);
    }

    private static Batch concat(Batch a, Batch b) {
        List<PreparedSample> all = new ArrayList<>(a.samples());
        all.addAll(b.samples());
        return new Batch(0, a.sequence(), all);
    }

    /** Random images with a labelled block whose place depends on the batch. */
    private static Batch batch(int device, long sequence, int size) {
        Shape3 s = Shape3.cube(32);
        List<PreparedSample> samples = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            long index = (sequence * 2 + i) * 2 + device;
            SplittableRandom random = new SplittableRandom(index);
            float[] image = new float[(int) s.voxels()];
            byte[] label = new byte[(int) s.voxels()];
            int offset = (int) (index % 8);
            for (int v = 0; v < image.length; v++) {
                int z = v / 1024;
                int y = v / 32 % 32;
                boolean inside = z >= 8 + offset && z < 20 + offset && y >= 6 && y < 22;
                label[v] = (byte) (inside ? 1 + (v % 7 == 0 ? 1 : 0) : 0);
                image[v] = (inside ? 1f : -1f) + (float) random.nextGaussian() * 0.3f;
            }
            samples.add(
                    new PreparedSample(
                            new SampleTask(1, 0, index, 0),
                            SamplePath.FAST,
                            1,
                            new Patch(s, image, label)));
        }
        return new Batch(device, sequence, samples);
    }
}
