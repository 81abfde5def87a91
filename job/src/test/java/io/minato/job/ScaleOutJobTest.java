package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.data.EpochOrder;
import io.minato.job.dataflow.LoaderJob;
import io.minato.job.report.ReportAssembly;
import io.minato.job.report.RunReport;
import io.minato.loader.AugmentOperator;
import io.minato.loader.Receivers;
import io.minato.loader.SampleChunks;
import io.minato.loader.TimeoutPolicy;
import io.minato.sample.Batch;
import io.minato.spi.Workload;
import io.minato.trainer.Accelerator;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.StepResult;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainerSink;
import io.minato.workload.kits19.CaseCache;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.TransformConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The whole job on a MiniCluster of three TaskManagers, its slots spread over all of them: samples
 * whose batcher or trainer runs in another TaskManager than their worker cross as their bytes,
 * once, and none is prepared twice; exactly-once holds across a failure; the scheduled workers
 * finish. (Several TaskManagers share this JVM here; the handoff in place is used only within one
 * TaskManager, so the bytes travel as on a real cluster.)
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ScaleOutJobTest {
    private static final int DEVICES = 2;
    private static final int BATCH = 2;
    private static final long SEED = 13;

    /**
     * A piece's bytes in the tests of samples in pieces: a 16^3 patch here is 20 KiB, so 11 pieces
     * (a real patch-128 sample goes in 3 pieces of {@link SampleChunks#MAX_BYTES}); that many make
     * a checkpoint between a sample's pieces likely.
     */
    private static final int PIECE_BYTES = 2 * 1024;

    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusterJobs.cluster(3, 2, spreadOut());

    private static Configuration spreadOut() {
        Configuration c = FlinkSetup.networkMemory(new Configuration(), 96);
        c.setString("taskmanager.load-balance.mode", "SLOTS");
        return c;
    }

    /** Set once by the failing accelerator (the MiniCluster runs in this JVM). */
    private static final AtomicBoolean FAILED = new AtomicBoolean();

    private static final AtomicInteger SNAPSHOTS = new AtomicInteger();

    @TempDir static Path data;
    static List<CaseFiles> train;

    @TempDir Path run;

    @BeforeAll
    static void generate() throws Exception {
        train = MiniClusterJobs.smallTrainingSet(data);
    }

    /**
     * Every loader on three TaskManagers: every (epoch, index) trained once, none prepared again;
     * Minato's samples crossed as bytes (its workers' and trainers' slots lie apart), the
     * baselines' loader ran beside a trainer.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(LoaderJob.Loader.class)
    void shouldTrainEverySampleOnceWithItsBytesCrossingTaskManagers(LoaderJob.Loader loader)
            throws Exception {
        int epochs = 4;
        JobExecutionResult result =
                run(loader, epochs, true, new SimulatedAccelerator.Factory(2), "auto");
        assertThat(traceOnce(epochs)).hasSize(train.size() * epochs);
        assertThat((Long) result.getAccumulatorResult(TrainerSink.PREPARED_AGAIN)).isZero();
        if (loader == LoaderJob.Loader.minato) {
            assertThat((Long) result.getAccumulatorResult(Receivers.SENT_AS_BYTES))
                    .as("samples that crossed to another TaskManager as bytes")
                    .isPositive();
        } else {
            // The baselines' loader runs in a trainer's slot, as a DataLoader runs in the
            // training process.
            assertThat(ReportAssembly.taskManagers(result.getAllAccumulatorResults()))
                    .anySatisfy(
                            tm -> {
                                assertThat(tm.trainers()).isPositive();
                                assertThat(tm.workers()).isEqualTo(1);
                            });
        }
    }

    /**
     * A trainer fails once after two checkpoints; the job restores on the three TaskManagers and
     * every (epoch, index) is still trained exactly once.
     */
    @Test
    void shouldTrainEverySampleExactlyOnceAcrossAFailure() throws Exception {
        trainOnceAcrossAFailure(12, SampleChunks.MAX_BYTES);
    }

    /**
     * Samples that cross to another TaskManager go in pieces (the limit lowered to the tests' small
     * patches): every (epoch, index) trained once, none prepared again.
     */
    @Test
    void shouldTrainEverySampleOnceWithSamplesCrossingInPieces() throws Exception {
        int epochs = 4;
        JobExecutionResult result =
                run(
                        LoaderJob.Loader.minato,
                        DEVICES,
                        2,
                        epochs,
                        true,
                        new SimulatedAccelerator.Factory(2),
                        "auto",
                        PIECE_BYTES);
        assertThat(traceOnce(epochs)).hasSize(train.size() * epochs);
        assertThat((Long) result.getAccumulatorResult(TrainerSink.PREPARED_AGAIN)).isZero();
        assertThat((Long) result.getAccumulatorResult(SampleChunks.SENT_IN_PIECES))
                .as("samples sent in pieces")
                .isPositive();
    }

    /**
     * Samples in pieces across a failure: a checkpoint may fall between a sample's pieces, and
     * every (epoch, index) is still trained exactly once.
     */
    @Test
    void shouldTrainEverySampleExactlyOnceAcrossAFailureWithSamplesInPieces() throws Exception {
        // Twice the epochs of the test above: pieces of 2 KiB slow the start, and on two busy
        // cores the run could end before the trainer saw two checkpoints.
        trainOnceAcrossAFailure(24, PIECE_BYTES);
    }

    /**
     * Minato's run of {@code epochs} through {@link FailOnceAfterCheckpoints}, samples that cross
     * TaskManagers going in pieces of {@code pieceBytes}: the fault was injected, and every (epoch,
     * index) was trained exactly once.
     */
    private void trainOnceAcrossAFailure(int epochs, int pieceBytes) throws Exception {
        FAILED.set(false);
        SNAPSHOTS.set(0);
        run(
                LoaderJob.Loader.minato,
                DEVICES,
                2,
                epochs,
                false,
                new FailOnceAfterCheckpoints(),
                "0.5",
                pieceBytes);
        assertThat(FAILED).as("the fault was injected").isTrue();
        assertThat(traceOnce(epochs)).hasSize(train.size() * epochs);
    }

    /**
     * With one device, workers fill slots of TaskManagers that hold no trainer. Their worker
     * schedulers still pace them by the device's queue, which the trainer reports through the job's
     * coordinators: no worker is paced blind, and every sample is trained once.
     */
    @Test
    void shouldPaceWorkersInTaskManagersWithoutATrainerByTheDevicesQueue() throws Exception {
        int epochs = 16;
        JobExecutionResult result =
                run(
                        LoaderJob.Loader.minato,
                        1,
                        3,
                        epochs,
                        true,
                        new SimulatedAccelerator.Factory(40),
                        "auto");
        assertThat(traceOnce(epochs)).hasSize(train.size() * epochs);
        assertThat((Long) result.getAccumulatorResult(AugmentOperator.PACED_BLIND))
                .as("scheduled workers whose TaskManager's scheduler never saw a queue")
                .isZero();
        // The report's task_managers: every subtask counted once, in the TaskManager it ran in.
        List<RunReport.TaskManager> tms =
                ReportAssembly.taskManagers(result.getAllAccumulatorResults());
        assertThat(tms).hasSizeGreaterThanOrEqualTo(2);
        assertThat(tms.stream().mapToInt(RunReport.TaskManager::trainers).sum()).isEqualTo(1);
        assertThat(tms.stream().mapToInt(RunReport.TaskManager::workers).sum()).isEqualTo(6);
        assertThat(tms).allSatisfy(tm -> assertThat(tm.cpuSeconds()).isPositive());
    }

    private JobExecutionResult run(
            LoaderJob.Loader loader,
            int epochs,
            boolean scheduled,
            AcceleratorFactory accelerator,
            String timeout)
            throws Exception {
        return run(loader, DEVICES, 2, epochs, scheduled, accelerator, timeout);
    }

    private JobExecutionResult run(
            LoaderJob.Loader loader,
            int devices,
            int workers,
            int epochs,
            boolean scheduled,
            AcceleratorFactory accelerator,
            String timeout)
            throws Exception {
        return run(
                loader,
                devices,
                workers,
                epochs,
                scheduled,
                accelerator,
                timeout,
                SampleChunks.MAX_BYTES);
    }

    /**
     * A run of {@code workers} fast and as many slow workers in front of {@code devices}, samples
     * that cross TaskManagers going in pieces of {@code pieceBytes}.
     */
    private JobExecutionResult run(
            LoaderJob.Loader loader,
            int devices,
            int workers,
            int epochs,
            boolean scheduled,
            AcceleratorFactory accelerator,
            String timeout,
            int pieceBytes)
            throws Exception {
        Workload<?> workload =
                new CaseTable(train, CaseCache.disabled())
                        .workload(TransformConfig.mlperf(16).withTail(0.3, 20));
        LoaderJob.Settings settings =
                new LoaderJob.Settings(
                        loader,
                        workload,
                        epochs,
                        SEED,
                        BATCH,
                        devices,
                        workers,
                        workers,
                        TimeoutPolicy.parse(timeout),
                        scheduled,
                        false);
        TrainerSink sink = MiniClusterJobs.sink(accelerator, run, workload);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(
                        FlinkSetup.jobConfiguration(run, Duration.ofMillis(100), 3));
        new LoaderJob(settings, sink, LoaderJob.TrainingSlots.APART)
                .sendingPiecesOf(pieceBytes)
                .build(env);
        JobExecutionResult result = env.execute("ScaleOutJobTest " + loader);
        TraceFiles.merge(run, run.resolve("trace.csv"));
        return result;
    }

    /** The trace's (epoch, index) pairs, each checked to appear once with its epoch's case. */
    private Set<String> traceOnce(int epochs) throws Exception {
        List<String> lines = Files.readAllLines(run.resolve("trace.csv"));
        assertThat(lines.get(0)).isEqualTo("epoch,index,case,device,step,path");
        Set<String> seen = new HashSet<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            int epoch = Integer.parseInt(f[0]);
            int index = Integer.parseInt(f[1]);
            assertThat(epoch).isBetween(0, epochs - 1);
            assertThat(Integer.parseInt(f[2]))
                    .isEqualTo(EpochOrder.permutation(SEED, epoch, train.size())[index]);
            assertThat(seen.add(epoch + "," + index)).as("trained twice: %s", line).isTrue();
        }
        return seen;
    }

    /** Device 0's step fails once, after two of its checkpoints; steps sleep 20 ms. */
    static final class FailOnceAfterCheckpoints implements AcceleratorFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public Accelerator create(int device, int devices) {
            return new SimulatedStep(20) {
                @Override
                public StepResult train(Batch batch) throws Exception {
                    if (device == 0 && SNAPSHOTS.get() >= 2 && FAILED.compareAndSet(false, true)) {
                        throw new IllegalStateException("injected device fault");
                    }
                    return super.train(batch);
                }

                @Override
                public byte[] snapshot() {
                    if (device == 0) {
                        SNAPSHOTS.incrementAndGet();
                    }
                    return new byte[0];
                }
            };
        }
    }
}
