package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.dataflow.LoaderJob;
import io.minato.job.report.ReportAssembly;
import io.minato.job.report.RunReport;
import io.minato.loader.TimeoutPolicy;
import io.minato.spi.SampleKey;
import io.minato.spi.Steps;
import io.minato.spi.Transforms;
import io.minato.spi.Workload;
import io.minato.trainer.DeviceSummary;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.TrainerSink;
import io.minato.workload.kits19.CaseCache;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.TransformConfig;
import java.io.DataInput;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The in-order loader's holds reach a trainer in another TaskManager: two TaskManagers of one slot
 * each put the two devices' trainers apart, the loader beside one of them, and one slow sample
 * holds the batch behind it back; both devices' summaries count that wait as head-of-line, the
 * device apart from the loader's included.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class HeadOfLineAcrossTaskManagersTest {
    private static final int DEVICES = 2;
    private static final int BATCH = 2;
    private static final long SEED = 3;

    /** Global sample 8 opens batch 4 (device 0's third step); batch 5 waits behind it. */
    private static final long SLOW_SAMPLE = 8;

    private static final long SLOW_MILLIS = 300;

    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            MiniClusterJobs.cluster(2, 1, FlinkSetup.networkMemory(new Configuration(), 64));

    @TempDir static Path data;
    static List<CaseFiles> train;

    @TempDir Path run;

    @BeforeAll
    static void generate() throws Exception {
        train = MiniClusterJobs.smallTrainingSet(data);
    }

    @Test
    void shouldCountTheWaitBehindAHeldBatchAsHeadOfLineOnEveryTaskManager() throws Exception {
        int epochs = 2;
        assertThat((long) train.size() * epochs).isGreaterThanOrEqualTo(SLOW_SAMPLE + 2 * BATCH);
        Workload<?> workload =
                slowAt(
                        new CaseTable(train, CaseCache.disabled())
                                .workload(TransformConfig.mlperf(16)),
                        SLOW_SAMPLE);
        LoaderJob.Settings settings =
                new LoaderJob.Settings(
                        LoaderJob.Loader.inorder,
                        workload,
                        epochs,
                        SEED,
                        BATCH,
                        DEVICES,
                        1,
                        1,
                        TimeoutPolicy.parse("auto"),
                        false,
                        false);
        TrainerSink sink =
                MiniClusterJobs.sink(new SimulatedAccelerator.Factory(5), run, settings.workload());
        // No checkpoints: at a barrier the in-order loader hands out every batch in flight, so it
        // would wait for the slow one before the batch behind it is even dispatched.
        Configuration config = FlinkSetup.jobConfiguration(run, Duration.ofSeconds(1), 0);
        config.removeKey("execution.checkpointing.interval");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        new LoaderJob(settings, sink).build(env);
        JobExecutionResult result = env.execute("HeadOfLineAcrossTaskManagersTest");

        List<RunReport.TaskManager> tms =
                ReportAssembly.taskManagers(result.getAllAccumulatorResults());
        assertThat(tms).as("one trainer in each TaskManager").hasSize(2);
        assertThat(tms).allSatisfy(tm -> assertThat(tm.trainers()).isEqualTo(1));
        assertThat(tms).filteredOn(tm -> tm.workers() == 1).as("the loader's").hasSize(1);
        for (int d = 0; d < DEVICES; d++) {
            DeviceSummary s = DeviceSummary.read(DeviceSummary.file(run, d));
            assertThat(s.steps()).isEqualTo((long) train.size() * epochs / BATCH / DEVICES);
            assertThat(s.headOfLineSeconds())
                    .as("device %d's wait behind the slow batch", d)
                    .isPositive()
                    .isLessThanOrEqualTo(s.waitSeconds());
        }
    }

    /** {@code workload} with global sample {@code slow} (epoch by epoch) prepared slowly. */
    private static <S> Workload<S> slowAt(Workload<S> workload, long slow) {
        int size = workload.size();
        return new Workload<>(
                workload.name(),
                workload.samples(),
                new SlowAt<>(workload.transforms(), (int) (slow / size), slow % size, SLOW_MILLIS));
    }

    /** The transforms of a workload, sleeping before one sample's preparation. */
    private record SlowAt<S>(Transforms<S> inner, int epoch, long index, long millis)
            implements Transforms<S> {
        @Override
        public Steps<S> start(SampleKey key) {
            if (key.epoch() == epoch && key.index() == index) {
                try {
                    Thread.sleep(millis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return inner.start(key);
        }

        @Override
        public Steps<S> read(DataInput in) throws IOException {
            return inner.read(in);
        }
    }
}
