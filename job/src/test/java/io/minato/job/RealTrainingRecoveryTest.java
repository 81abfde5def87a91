package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.dataflow.LoaderJob;
import io.minato.loader.TimeoutPolicy;
import io.minato.sample.Batch;
import io.minato.trainer.Accelerator;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.DeviceSummary;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.ReplicaGroup;
import io.minato.trainer.StepResult;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainerSink;
import io.minato.trainer.TrainingSettings;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.Dataset;
import io.minato.workload.kits19.KitsLikeGenerator;
import io.minato.workload.kits19.TransformConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The real DJL trainer across a failure: model state restored from the checkpoint, nothing twice.
 */
class RealTrainingRecoveryTest {
    @RegisterExtension
    // Two TaskManagers of one slot, and a job two slots wide: subtask i of every operator shares
    // slot i, so cpu:2's two trainers run in different TaskManagers and average their gradients
    // over the replica link.
    static final MiniClusterExtension CLUSTER = MiniClusterJobs.cluster(2, 1, new Configuration());

    private static final Duration CHECKPOINT_INTERVAL = Duration.ofMillis(100);
    private static final AtomicInteger SNAPSHOTS = new AtomicInteger();
    private static final AtomicInteger RESTORES = new AtomicInteger();
    private static final AtomicBoolean FAILED = new AtomicBoolean();
    // Per device, the checkpoint that took its first snapshot holding a model.
    private static final Map<Integer, Long> FIRST_MODEL_CHECKPOINT = new ConcurrentHashMap<>();
    private static final Map<Integer, byte[]> FINAL_STATE = new ConcurrentHashMap<>();

    @TempDir Path data;
    @TempDir Path run;

    @BeforeEach
    void resetCounters() {
        SNAPSHOTS.set(0);
        RESTORES.set(0);
        FAILED.set(false);
        FIRST_MODEL_CHECKPOINT.clear();
        FINAL_STATE.clear();
    }

    /**
     * One device, or {@code cpu:2} in synchronous data parallelism: after the restore both replicas
     * resume from the same checkpointed step and end with identical models.
     */
    @ParameterizedTest(name = "{0} device(s)")
    @ValueSource(ints = {1, 2})
    void shouldResumeRealTrainingFromTheCheckpointedModelWithEverySampleTrainedOnce(int devices)
            throws Exception {
        KitsLikeGenerator.builder().optCases(5).optScale(0.25).optSeed(9).build().generate(data);
        List<CaseFiles> train = Dataset.scan(data).split(1).train();
        int epochs = 16;
        LoaderJob.Settings settings =
                new LoaderJob.Settings(
                        LoaderJob.Loader.minato,
                        new CaseTable(train).workload(TransformConfig.mlperf(32)),
                        epochs,
                        3,
                        2,
                        devices,
                        2,
                        1,
                        TimeoutPolicy.parse("auto"),
                        false,
                        false);
        TrainingSettings training =
                TrainingSettings.builder()
                        .setWidth(0.125)
                        .setLearningRate(0.01f)
                        .optMomentum(0.9f)
                        .optWarmUp(2, 0f)
                        .setSeed(3)
                        .build();
        TrainerSink sink =
                MiniClusterJobs.sink(
                        new FailOnceAModelIsCheckpointed(
                                training, run.resolve("checkpoints").toString()),
                        run,
                        settings.workload());
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(
                        FlinkSetup.jobConfiguration(run, CHECKPOINT_INTERVAL, 2));
        new LoaderJob(settings, sink).build(env);
        env.execute("real training with a failure");

        assertThat(FAILED)
                .as(
                        "the fault was injected (%d snapshots with a model, first in checkpoints"
                                + " %s, latest complete checkpoint %d)",
                        SNAPSHOTS.get(),
                        FIRST_MODEL_CHECKPOINT,
                        newest(run.resolve("checkpoints"), true))
                .isTrue();
        assertThat(RESTORES.get()).as("model parameters restored from a checkpoint").isPositive();
        TraceFiles.merge(run, run.resolve("trace.csv"));
        assertThat(MiniClusterJobs.trainedOnce(run.resolve("trace.csv")))
                .hasSize(train.size() * epochs);
        long steps = 0;
        long samples = 0;
        for (int d = 0; d < devices; d++) {
            DeviceSummary summary = DeviceSummary.read(DeviceSummary.file(run, d));
            assertThat(summary.lastLoss()).isFinite();
            steps += summary.steps();
            samples += summary.samples();
        }
        assertThat(samples).isEqualTo(train.size() * epochs);
        // Batches of 2, and at most one smaller last batch per device (samples are dealt in turn
        // as they become ready, so devices can end a few samples apart).
        assertThat(steps)
                .isBetween(train.size() * epochs / 2L, train.size() * epochs / 2L + devices);
        assertThat(run.resolve("model-device-0").resolve("unet3d-0000.params")).isRegularFile();
        assertThat(FINAL_STATE).hasSize(devices);
        for (int d = 1; d < devices; d++) {
            assertThat(FINAL_STATE.get(d))
                    .as("replica %d ends with replica 0's model", d)
                    .isEqualTo(FINAL_STATE.get(0));
        }
    }

    /**
     * The real trainer, failing once on a step after a checkpoint holding every device's model has
     * completed (counting snapshots was not enough: where checkpoints complete slowly, the fault
     * came before any had, and the restart had no model to restore); counts restores.
     */
    record FailOnceAModelIsCheckpointed(TrainingSettings settings, String checkpoints)
            implements AcceleratorFactory {
        @Override
        public Accelerator create(int device, int devices) {
            DjlAccelerator real = new DjlAccelerator(settings);
            return new Accelerator() {
                @Override
                public StepResult train(Batch batch) throws Exception {
                    if (modelCheckpointed(devices) && FAILED.compareAndSet(false, true)) {
                        throw new IllegalStateException("injected device fault");
                    }
                    StepResult result = real.train(batch);
                    if (!FAILED.get()) {
                        // Until then, steps slower than the checkpoint interval: these steps of a
                        // tiny model could otherwise all end before a checkpoint completes, and
                        // the fault would never come. A snapshot waits for the step to end, so
                        // the step cannot wait for the checkpoint instead.
                        Thread.sleep(5 * CHECKPOINT_INTERVAL.toMillis());
                    }
                    return result;
                }

                /**
                 * Whether a checkpoint after the one with each device's first model has completed
                 * (the next one: Flink triggers it only once that one is complete).
                 */
                private boolean modelCheckpointed(int devices) {
                    if (FIRST_MODEL_CHECKPOINT.size() < devices) {
                        return false;
                    }
                    long first = Collections.max(FIRST_MODEL_CHECKPOINT.values());
                    return newest(Path.of(checkpoints), true) > first;
                }

                @Override
                public String kind() {
                    return real.kind();
                }

                @Override
                public boolean replicated() {
                    return real.replicated();
                }

                @Override
                public void replicate(ReplicaGroup.Member member) {
                    real.replicate(member);
                }

                @Override
                public boolean idleStep() throws Exception {
                    return real.idleStep();
                }

                @Override
                public byte[] snapshot() {
                    byte[] state = real.snapshot();
                    if (state.length > 0) {
                        SNAPSHOTS.incrementAndGet();
                        // The checkpoint under way is the newest one Flink made a folder for.
                        // (None found, as when a listing failed: the next snapshot tries again.)
                        FIRST_MODEL_CHECKPOINT.computeIfAbsent(
                                device,
                                d -> {
                                    long chk = newest(Path.of(checkpoints), false);
                                    return chk < 0 ? null : chk;
                                });
                    }
                    return state;
                }

                @Override
                public void restore(byte[] state) {
                    if (state.length > 0) {
                        RESTORES.incrementAndGet();
                    }
                    real.restore(state);
                }

                @Override
                public void finish(Path outputDir, int device) throws Exception {
                    FINAL_STATE.put(device, real.snapshot());
                    real.finish(outputDir, device);
                }

                @Override
                public void close() {
                    real.close();
                }
            };
        }
    }

    /**
     * The newest {@code chk-N} folder's N under {@code checkpoints/<job id>/}, or -1: of a complete
     * checkpoint (with its {@code _metadata}), or of any, complete or under way.
     */
    static long newest(Path checkpoints, boolean complete) {
        if (!Files.isDirectory(checkpoints)) {
            return -1;
        }
        try (Stream<Path> chks = Files.find(checkpoints, 2, (p, a) -> a.isDirectory())) {
            return chks.filter(p -> p.getFileName().toString().startsWith("chk-"))
                    .filter(p -> !complete || Files.isRegularFile(p.resolve("_metadata")))
                    .mapToLong(p -> Long.parseLong(p.getFileName().toString().substring(4)))
                    .max()
                    .orElse(-1);
        } catch (IOException | UncheckedIOException e) {
            // A folder Flink deleted while we listed: look again on the next step.
            return -1;
        }
    }
}
