package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.tracker.Tracker;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.gpu.FlinkGpusTest;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.gpu.TrainingDevice;
import io.minato.trainer.images.ImageClassifier;
import io.minato.trainer.kits19.unet.Unet3d;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DjlAcceleratorTest {
    private static final TrainingSettings SETTINGS =
            TrainingSettings.builder()
                    .setWidth(0.125)
                    .setLearningRate(0.01f)
                    .optMomentum(0.9f)
                    .optWarmUp(2, 0f)
                    .setSeed(3)
                    .build();

    @Test
    void shouldPlaceEachReplicaOnTheDeviceTheTrainCommandNames() {
        var factory =
                new DjlAccelerator.Factory(
                        SETTINGS,
                        java.util.List.of(
                                TrainingDevice.cpu(0),
                                TrainingDevice.gpu(1),
                                TrainingDevice.gpu(0)));
        assertThat(factory.device(0)).isEqualTo(ai.djl.Device.cpu());
        assertThat(factory.device(1)).isEqualTo(ai.djl.Device.gpu(1));
        assertThat(factory.device(2)).isEqualTo(ai.djl.Device.gpu(0));
        assertThat(new DjlAccelerator.Factory(SETTINGS).device(5)).isEqualTo(ai.djl.Device.cpu());
    }

    /**
     * On a cluster the trainers take the GPUs Flink gives their TaskManager; where its PyTorch is a
     * CPU build (or sees fewer GPUs) they train on the CPU, and without Flink's GPUs they refuse to
     * start in one line.
     */
    @Test
    void shouldTakeItsGpuFromFlinkAndFallBackToTheCpuWherePyTorchHasNone() throws Exception {
        assumeTrue(
                ai.djl.engine.Engine.getEngine("PyTorch").getGpuCount() == 0,
                "PyTorch here has a GPU");
        var factory =
                new DjlAccelerator.Factory(
                        SETTINGS,
                        java.util.List.of(TrainingDevice.flinkGpu(0), TrainingDevice.flinkGpu(1)));

        try (Accelerator a = factory.create(1, 2, FlinkGpusTest.gpus("4", "6"))) {
            assertThat(a.kind()).isEqualTo("cpu");
        }
        assertThat(factory.device(0)).as("where the client evaluates").isEqualTo(Device.cpu());
        assertThatThrownBy(() -> factory.create(0, 2))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith(
                        "device 0 of the 2 the job trains on GPUs from Flink's external resource"
                                + " framework found none free in its TaskManager, which got none");
        assertThatThrownBy(() -> factory.create(1, 2, FlinkGpusTest.gpus("4")))
                .hasMessageContaining("in its TaskManager, which got 1 [4], all taken");
    }

    @Test
    void shouldTrainAStepAndCarryItsParametersThroughASnapshot() throws Exception {
        Batch batch = batch();
        byte[] afterOneStep;
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            StepResult r = a.train(batch);
            assertThat(r.loss()).isFinite().isPositive();
            assertThat(r.busyNanos()).isPositive();
            afterOneStep = a.snapshot();
        }
        assertThat(afterOneStep).isNotEmpty();
        try (DjlAccelerator restored = new DjlAccelerator(SETTINGS);
                DjlAccelerator fresh = new DjlAccelerator(SETTINGS)) {
            restored.restore(afterOneStep);
            restored.train(batch); // the first batch fixes the shape; the restored parameters apply
            fresh.train(batch);
            // Same seed: a fresh replica starts where the first did, not where its step left it.
            assertThat(restored.snapshot()).isNotEqualTo(fresh.snapshot());
        }
    }

    @Test
    void shouldWriteACapturedStateAsItWasWhenCapturedWhileStepsGoOn() throws Exception {
        Batch batch = batch();
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            try (Accelerator.Capture none = a.capture()) {
                assertThat(none.bytes()).as("no model yet").isEmpty();
            }
            a.train(batch);
            byte[] afterOne = a.snapshot();
            byte[] afterTwo;
            try (Accelerator.Capture captured = a.capture()) {
                a.train(batch);
                afterTwo = a.snapshot();
                assertThat(afterTwo).isNotEqualTo(afterOne);
                assertThat(captured.bytes()).isEqualTo(afterOne);
            }
            Accelerator.Capture unwanted = a.capture();
            unwanted.close(); // its copies freed without writing them
            assertThat(a.snapshot()).isEqualTo(afterTwo);
        }
    }

    @Test
    void shouldFollowTheReferenceScheduleWarmUpThenMultiStepDecay() {
        Tracker s =
                TrainingSettings.builder()
                        .setWidth(0.125)
                        .setLearningRate(0.1f)
                        .optWarmUp(4, 0.02f)
                        .optDecay(List.of(6L, 8L), 0.5f)
                        .setSeed(3)
                        .build()
                        .learningRates();
        assertThat(s.getNewValue(0)).isEqualTo(0.02f);
        assertThat(s.getNewValue(2)).isCloseTo(0.06f, within(1e-7f));
        assertThat(s.getNewValue(4)).isEqualTo(0.1f);
        assertThat(s.getNewValue(5)).isEqualTo(0.1f);
        assertThat(s.getNewValue(6)).isCloseTo(0.05f, within(1e-7f));
        assertThat(s.getNewValue(8)).isCloseTo(0.025f, within(1e-7f));
        assertThat(
                        TrainingSettings.builder()
                                .setWidth(0.125)
                                .setLearningRate(0.1f)
                                .setSeed(3)
                                .build()
                                .learningRates()
                                .getNewValue(1))
                .isEqualTo(0.1f);
        var builder = TrainingSettings.builder().setWidth(0.125).setLearningRate(0.1f).setSeed(3);
        assertThatThrownBy(() -> builder.optWarmUp(4, 0f).optDecay(List.of(8L, 6L), 0.5f).build())
                .hasMessageContaining("decay steps must be increasing");
        assertThatThrownBy(() -> builder.optWarmUp(4, 0f).optDecay(List.of(4L), 0.5f).build())
                .hasMessage("decay steps must come after the 4 warm-up steps: [4]");
        assertThatThrownBy(() -> TrainingSettings.builder().setWidth(1).setSeed(3).build())
                .hasMessage("width, learning rate and seed must be set");
    }

    /**
     * DJL's trackers give every step of a schedule the rate of the reference's formula, written out
     * here: in the warm-up to the float's last bit (DJL interpolates in float, the formula in
     * double), after it exactly; steps go in order, as a trainer's do, and out of order.
     */
    @ParameterizedTest(name = "{0} warm-up steps from {1} to {2}, x {4} at {3}")
    @CsvSource({
        "20, 0, 0.1, '', 1", // the train command's defaults
        "20, 0, 0.1, 800, 0.1", // the demo's schedule
        "4, 0.02, 0.1, 6;8, 0.5",
        "1, 0, 0.1, 2, 0.5",
        "100, 0.001, 0.3, 101;400;1000, 0.3",
        "37, 0.0001, 0.05, 38;39;500, 2",
        "0, 0, 0.002, 1;3;7, 0.1",
    })
    void shouldGiveEveryStepTheRateOfTheReferenceFormula(
            int warmup, float start, float rate, String decay, float factor) {
        List<Long> milestones =
                decay.isEmpty()
                        ? List.of()
                        : Arrays.stream(decay.split(";")).map(Long::valueOf).toList();
        TrainingSettings settings =
                TrainingSettings.builder()
                        .setWidth(0.125)
                        .setLearningRate(rate)
                        .optWarmUp(warmup, start)
                        .optDecay(milestones, factor)
                        .setSeed(3)
                        .build();
        long last = (milestones.isEmpty() ? warmup : milestones.get(milestones.size() - 1)) + 50;
        Tracker inOrder = settings.learningRates();
        int exact = 0;
        for (int step = 0; step <= last; step++) {
            float expected = referenceRate(step, warmup, start, rate, milestones, factor);
            float actual = inOrder.getNewValue(step);
            if (step < warmup) {
                // Positive floats in order have consecutive bits: one apart is one ulp.
                assertThat(Math.abs(Float.floatToIntBits(actual) - Float.floatToIntBits(expected)))
                        .as("step %d: %s for %s", step, actual, expected)
                        .isLessThanOrEqualTo(1);
            } else {
                assertThat(actual).as("step %d", step).isEqualTo(expected);
            }
            exact += actual == expected ? 1 : 0;
        }
        assertThat(exact).isGreaterThan((int) (last * 9 / 10));
        Tracker backwards = settings.learningRates();
        for (int step = (int) last; step >= 0; step--) {
            assertThat(backwards.getNewValue(step)).isEqualTo(inOrder.getNewValue(step));
        }
    }

    /** The MLPerf reference's linear warm-up and MultiStepLR, in global steps. */
    private static float referenceRate(
            long step, int warmup, float start, float rate, List<Long> decay, float factor) {
        if (step < warmup) {
            return (float) (start + (rate - start) * ((double) step / warmup));
        }
        double lr = rate;
        for (long milestone : decay) {
            if (step >= milestone) {
                lr *= factor;
            }
        }
        return (float) lr;
    }

    @Test
    void shouldComputeWithItsShareOfThreadsOnTheThreadThatTrains() throws Exception {
        assumeTrue(!TorchThreads.chosenByUser(), "OMP_NUM_THREADS chooses libtorch's threads");
        ai.djl.engine.Engine.getEngine("PyTorch");
        int before = JniUtils.getNumThreads();
        int share = before == 1 ? 2 : 1; // not what libtorch would take anyway
        int[] seen = new int[1];
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            a.useThreads(share);
            // A thread of its own, as the trainer's: libtorch sizes a thread's pool when that
            // thread first computes.
            Thread trainer =
                    new Thread(
                            () -> {
                                try {
                                    a.train(batch());
                                    seen[0] = JniUtils.getNumThreads();
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                            });
            trainer.start();
            trainer.join();
        } finally {
            JniUtils.setNumThreads(before);
        }
        assertThat(seen[0]).isEqualTo(share);
    }

    /**
     * Prepared on the trainer's thread before the first step, the model comes back as restored;
     * until then a snapshot gives the restored state itself, so a checkpoint need not wait.
     */
    @Test
    void shouldSnapshotTheRestoredStateBeforeAndAfterPreparing() throws Exception {
        byte[] state;
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            a.train(batch());
            state = a.snapshot();
        }
        try (DjlAccelerator b = new DjlAccelerator(SETTINGS)) {
            b.restore(state);
            assertThat(b.snapshot()).as("before preparing").isEqualTo(state);
            b.prepare();
            assertThat(b.step()).isEqualTo(1);
            assertThat(b.snapshot()).as("prepared").isEqualTo(state);
        }
        try (DjlAccelerator fresh = new DjlAccelerator(SETTINGS)) {
            assertThat(fresh.snapshot()).as("nothing to restore, nothing trained").isEmpty();
        }
    }

    @Test
    void shouldSaveTheTrainedModelInDjlsFormatAtTheEnd(@TempDir Path dir) throws Exception {
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            a.train(batch());
            a.finish(dir, 0);
            Path saved = dir.resolve("model-device-0");
            assertThat(saved.resolve("unet3d-0000.params")).isRegularFile();
            try (Model loaded = Model.newInstance("unet3d", Device.cpu())) {
                loaded.setBlock(Unet3d.builder().optWidth(SETTINGS.width()).build());
                loaded.load(saved, "unet3d");
                var mine = a.parameters();
                var theirs = loaded.getBlock().getParameters();
                assertThat(theirs.size()).isEqualTo(mine.size());
                for (int i = 0; i < mine.size(); i++) {
                    assertThat(theirs.get(i).getValue().getArray().toFloatArray())
                            .isEqualTo(mine.get(i).getValue().getArray().toFloatArray());
                }
            }
        }
    }

    @Test
    void shouldStartEveryReplicaFromTheSameParameters() throws Exception {
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS);
                DjlAccelerator b = new DjlAccelerator(SETTINGS)) {
            a.train(batch());
            b.train(batch());
            assertThat(a.snapshot()).isEqualTo(b.snapshot());
        }
    }

    /**
     * A device alone keeps its gradient on the device and posts nothing to its group of one; it
     * must train exactly as a trainer outside any group, and still step with the group's count.
     */
    @Test
    void shouldTrainInAGroupOfOneExactlyAsAlone() throws Exception {
        ReplicaGroup.Member member =
                ReplicaGroup.join("alone-" + java.util.UUID.randomUUID(), 1, 0);
        try (DjlAccelerator grouped = new DjlAccelerator(SETTINGS);
                DjlAccelerator alone = new DjlAccelerator(SETTINGS)) {
            grouped.replicate(member);
            for (int i = 0; i < 3; i++) {
                assertThat(grouped.train(batch()).loss()).isEqualTo(alone.train(batch()).loss());
            }
            assertThat(grouped.snapshot()).isEqualTo(alone.snapshot());
            assertThat(grouped.step()).isEqualTo(3);
            assertThat(member.startStep()).isEqualTo(3);
            assertThat(grouped.idleStep()).isFalse(); // no data anywhere: training is over
        } finally {
            member.leave();
        }
    }

    /**
     * The next batch, when the writer already holds it, is copied into the other pair of input
     * buffers while the step runs (on a GPU, while its kernels run): training is the same, bit for
     * bit, as without, and a staged batch that does not come next is not used.
     */
    @Test
    void shouldStageTheNextBatchDuringAStepAndTrainExactlyAsWithout() throws Exception {
        List<Batch> batches = List.of(batch(0), batch(1), batch(2), batch(3));
        try (DjlAccelerator staged = new DjlAccelerator(SETTINGS);
                DjlAccelerator plain = new DjlAccelerator(SETTINGS)) {
            for (int i = 0; i < batches.size(); i++) {
                Batch next = i + 1 < batches.size() ? batches.get(i + 1) : null;
                assertThat(staged.train(batches.get(i), next).loss())
                        .as("step %d", i)
                        .isEqualTo(plain.train(batches.get(i)).loss());
            }
            assertThat(staged.stagedSteps()).isEqualTo(3);
            // Batch 6 is staged, batch 7 comes (a failover, say): 7 is trained, not 6.
            assertThat(staged.train(batch(5), batch(6)).loss())
                    .isEqualTo(plain.train(batch(5)).loss());
            assertThat(staged.train(batch(7), null).loss()).isEqualTo(plain.train(batch(7)).loss());
            assertThat(staged.stagedSteps()).isEqualTo(3);
            assertThat(staged.snapshot()).isEqualTo(plain.snapshot());
        }
    }

    /** A GPU waiting on the host for its replicas is idle; CPU replicas keep the whole step. */
    @Test
    void shouldCountOnlyTheDevicesOwnTimeAsBusyOnAGpu() {
        assertThat(DjlAccelerator.busyNanos(100, 30, Device.gpu(1))).isEqualTo(70);
        assertThat(DjlAccelerator.busyNanos(100, 30, Device.cpu())).isEqualTo(100);
        assertThat(DjlAccelerator.busyNanos(100, 0, Device.gpu())).isEqualTo(100);
        assertThat(DjlAccelerator.busyNanos(5, 9, Device.gpu())).isZero(); // clock granularity
    }

    @Test
    void shouldRefuseABatchThatMixesPatchShapes() {
        Batch one = batch();
        Shape3 small = Shape3.cube(16);
        var mixed =
                new Batch(
                        0,
                        3,
                        List.of(
                                one.samples().get(0),
                                new PreparedSample(
                                        new SampleTask(1, 0, 1, 0),
                                        SamplePath.FAST,
                                        1,
                                        new Patch(
                                                small,
                                                new float[(int) small.voxels()],
                                                new byte[(int) small.voxels()]))));
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            assertThatThrownBy(() -> a.train(mixed))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("batch 3 mixes patch shapes");
        }
    }

    @Test
    void shouldRefuseTheStateOfAnotherWidthInOneLine() throws Exception {
        byte[] narrow;
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            narrow = a.initializedState();
        }
        TrainingSettings wide =
                TrainingSettings.builder()
                        .setWidth(0.25)
                        .setLearningRate(0.01f)
                        .optMomentum(0.9f)
                        .optWarmUp(2, 0f)
                        .setSeed(3)
                        .build();
        try (DjlAccelerator b = new DjlAccelerator(wide)) {
            b.restore(narrow);
            assertThatThrownBy(() -> b.train(batch()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("another width?")
                    .hasMessageNotContaining("\n");
        }
    }

    /**
     * A run checkpointed before states named their network (magic "MNS1", no name) resumes: such a
     * state is the 3D-UNet's, and only the UNet takes it.
     */
    @Test
    void shouldResumeAUnetStateOfBeforeNetworksWereNamed() throws Exception {
        byte[] named;
        byte[] afterTwo;
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            a.train(batch());
            named = a.snapshot();
            a.train(batch());
            afterTwo = a.snapshot();
        }
        // MNS2 is magic, writeUTF("unet3d") (2 + 6 bytes), then MNS1's layout.
        java.nio.ByteBuffer old = java.nio.ByteBuffer.allocate(named.length - 8);
        old.putInt(0x4D4E5331).put(named, 12, named.length - 12);
        try (DjlAccelerator restored = new DjlAccelerator(SETTINGS)) {
            restored.restore(old.array());
            restored.train(batch());
            assertThat(restored.snapshot()).isEqualTo(afterTwo);
        }
        try (DjlAccelerator classifier =
                new DjlAccelerator(SETTINGS.withNetwork(new ImageClassifier(2, 0.5)))) {
            classifier.restore(old.array());
            assertThatThrownBy(classifier::initializedState)
                    .hasMessage("the checkpoint holds a unet3d model; this run trains cnn2d");
        }
    }

    @Test
    void shouldHaveNoGpuMonitorOnTheCpuNorOnAGpuThisMachineLacks() {
        try (DjlAccelerator cpu = new DjlAccelerator(SETTINGS)) {
            assertThat(cpu.gpuMonitor()).isSameAs(GpuMonitor.absent());
        }
        assumeTrue(Files.notExists(Path.of("/dev/nvidiactl")), "an NVIDIA driver is loaded here");
        try (DjlAccelerator gpu = new DjlAccelerator(SETTINGS, Device.gpu(0))) {
            assertThat(gpu.kind()).isEqualTo("gpu");
            assertThat(gpu.gpuMonitor()).isSameAs(GpuMonitor.absent());
        }
    }

    private static Batch batch() {
        return batch(0);
    }

    /** Batch {@code k}: a cube of foreground, brighter and shifted with {@code k}. */
    static Batch batch(int k) {
        Shape3 s = Shape3.cube(32);
        float[] image = new float[(int) s.voxels()];
        byte[] label = new byte[(int) s.voxels()];
        for (int i = 0; i < image.length; i++) {
            boolean inside =
                    i / 1024 >= 8 + k % 4
                            && i / 1024 < 24
                            && i / 32 % 32 >= 8
                            && i / 32 % 32 < 24 - k % 3;
            image[i] = inside ? 1f + 0.1f * k : -1f;
            label[i] = (byte) (inside ? 1 : 0);
        }
        return new Batch(
                0,
                k,
                List.of(
                        new PreparedSample(
                                new SampleTask(1, 0, 0, 0),
                                SamplePath.FAST,
                                1,
                                new Patch(s, image, label))));
    }
}
