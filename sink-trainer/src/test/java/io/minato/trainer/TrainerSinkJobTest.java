package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trainer sink inside a Flink job on a shared MiniCluster: two devices, batches routed so that
 * device i reaches subtask i. Batches cross Flink serialization here through Kryo until the sample
 * types get their own TypeSerializers.
 */
class TrainerSinkJobTest {

    private static final int DEVICES = 2;

    // A TaskManager of one slot per device: the job is two slots wide, so the two trainers run in
    // different TaskManagers, as Flink may place them on a cluster.
    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(DEVICES)
                            .setNumberSlotsPerTaskManager(1)
                            .build());

    // The MiniCluster runs in this JVM with this class loader: the injected fault is seen here.
    private static final AtomicInteger DEVICE0_SNAPSHOTS = new AtomicInteger();
    private static final AtomicInteger RESTORES = new AtomicInteger();
    private static final AtomicBoolean FAILED = new AtomicBoolean();
    private static final Map<Integer, Integer> SNAPSHOTS_AFTER_FAILURE = new ConcurrentHashMap<>();
    private static final AtomicInteger STEPS_AFTER_FAILURE = new AtomicInteger();

    @TempDir Path tmp;

    @BeforeEach
    void reset() {
        DEVICE0_SNAPSHOTS.set(0);
        RESTORES.set(0);
        FAILED.set(false);
        SNAPSHOTS_AFTER_FAILURE.clear();
        STEPS_AFTER_FAILURE.set(0);
    }

    @Test
    void shouldTrainEachDevicesBatchesOnItsSubtaskAndWriteSummariesAndTrace() throws Exception {
        List<Batch> batches = batches(5, 3);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        sink(new SimulatedAccelerator.Factory(5))
                .trainOn(byDevice(env.fromData(batches)))
                .setParallelism(DEVICES);
        env.execute("trainer sink");

        checkSummariesAndTrace(batches);
        assertThat(DeviceSummary.read(DeviceSummary.file(tmp.resolve("out"), 0)).accelerator())
                .isEqualTo("simulated");
    }

    @Test
    void shouldTrainEverySampleExactlyOnceAcrossAFailureAndRestoreFromACheckpoint()
            throws Exception {
        List<Batch> batches = batches(50, 50);
        StreamExecutionEnvironment env = restarting(2);
        env.enableCheckpointing(100);
        // A throttled source, so that checkpoints happen while batches still flow.
        DataStream<Batch> source = throttled(env, batches, 8);
        sink(new FailOnce(2, 2)).trainOn(byDevice(source)).setParallelism(DEVICES);
        env.execute("trainer sink with a failure");

        assertThat(FAILED).as("the fault was injected").isTrue();
        assertThat(RESTORES.get()).as("model state restored from a checkpoint").isPositive();
        checkSummariesAndTrace(batches);
    }

    /**
     * After a restore, the trainers' coordinator asks for a checkpoint once the restored trainers
     * run: with an interval of an hour, no periodic checkpoint comes while the job's 80 s of input
     * flow, nor a final one.
     */
    @Test
    void shouldCheckpointAsSoonAsTheRestoredTrainersRun() throws Exception {
        StreamExecutionEnvironment env = restarting(1);
        env.enableCheckpointing(Duration.ofHours(1).toMillis());
        DataStream<Batch> source = throttled(env, batches(2000, 2000), 20);
        unwritten(new FailOnce(0, 1)).trainOn(byDevice(source)).setParallelism(DEVICES);
        JobClient job = env.executeAsync("trainer sink restored");
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (SNAPSHOTS_AFTER_FAILURE.size() < DEVICES && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(FAILED).as("the fault was injected").isTrue();
            assertThat(SNAPSHOTS_AFTER_FAILURE)
                    .as("devices that snapshotted after the restore")
                    .containsOnlyKeys(0, 1);
        } finally {
            job.cancel().get();
            while (!job.getJobStatus().get().isGloballyTerminalState()) {
                Thread.sleep(20);
            }
        }
    }

    /** A job that takes no checkpoints gets none after a restore either. */
    @Test
    void shouldNotCheckpointAfterARestoreWhenTheJobTakesNoCheckpoints() throws Exception {
        StreamExecutionEnvironment env = restarting(1);
        DataStream<Batch> source = throttled(env, batches(2000, 2000), 5);
        unwritten(new FailOnce(0, 1)).trainOn(byDevice(source)).setParallelism(DEVICES);
        JobClient job = env.executeAsync("trainer sink restored, no checkpoints");
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            // About a second of training after the restore, ten times the coordinator's retry.
            while (STEPS_AFTER_FAILURE.get() < 400 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(STEPS_AFTER_FAILURE.get())
                    .as("the restored trainers train")
                    .isGreaterThanOrEqualTo(400);
            assertThat(SNAPSHOTS_AFTER_FAILURE).isEmpty();
        } finally {
            job.cancel().get();
            while (!job.getJobStatus().get().isGloballyTerminalState()) {
                Thread.sleep(20);
            }
        }
    }

    /** An environment whose job restarts {@code attempts} times, 10 ms after a failure. */
    private static StreamExecutionEnvironment restarting(int attempts) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, attempts);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(10));
        return StreamExecutionEnvironment.getExecutionEnvironment(conf);
    }

    /** {@code batches} in order, one every {@code millis}. */
    private static DataStream<Batch> throttled(
            StreamExecutionEnvironment env, List<Batch> batches, long millis) {
        return env.fromData(batches)
                .map(
                        b -> {
                            Thread.sleep(millis);
                            return b;
                        })
                .setParallelism(1);
    }

    /** Device d's batches go to subtask d: the partitioner's result is the subtask index. */
    private static DataStream<Batch> byDevice(DataStream<Batch> batches) {
        return batches.partitionCustom(
                (Partitioner<Integer>) (device, subtasks) -> device, Batch::device);
    }

    private TrainerSink sink(AcceleratorFactory accelerator) {
        return builder(accelerator)
                .optOutputDir(tmp.resolve("out"))
                .optTraceDir(tmp.resolve("trace"))
                .build();
    }

    /**
     * A sink that writes no files, for a job the test cancels: the trainers' coordinator in the
     * JobManager may still take a checkpoint's completion, and write its account into the run
     * directory, after the client saw the job cancelled, while the test's folder is being deleted.
     */
    private static TrainerSink unwritten(AcceleratorFactory accelerator) {
        return builder(accelerator).build();
    }

    private static TrainerSink.Builder builder(AcceleratorFactory accelerator) {
        return TrainerSink.builder().setAccelerator(accelerator).optRecipe(TestBatches.RECIPE);
    }

    /** Interleaved batches of both devices; every (epoch, index) is distinct. */
    private static List<Batch> batches(int device0, int device1) {
        List<Batch> out = new ArrayList<>();
        long index = 0;
        int[] counts = {device0, device1};
        for (int seq = 0; seq < Math.max(device0, device1); seq++) {
            for (int d = 0; d < DEVICES; d++) {
                if (seq < counts[d]) {
                    SamplePath second = seq % 3 == 0 ? SamplePath.SLOW : SamplePath.FAST;
                    out.add(
                            new Batch(
                                    d,
                                    seq,
                                    List.of(
                                            TestBatches.sample(0, index, 1, SamplePath.FAST),
                                            TestBatches.sample(0, index + 1, 2, second))));
                    index += 2;
                }
            }
        }
        return out;
    }

    private void checkSummariesAndTrace(List<Batch> batches) throws Exception {
        Map<String, String> expected = new HashMap<>(); // "epoch,index" -> "case,device,path"
        long[] steps = new long[DEVICES];
        long[] slow = new long[DEVICES];
        for (Batch b : batches) {
            steps[b.device()]++;
            for (PreparedSample s : b.samples()) {
                expected.put(
                        s.task().epoch() + "," + s.task().index(),
                        s.task().caseIndex() + "," + b.device() + "," + s.path().csv());
                slow[b.device()] += s.path() == SamplePath.SLOW ? 1 : 0;
            }
        }
        for (int d = 0; d < DEVICES; d++) {
            DeviceSummary s = DeviceSummary.read(DeviceSummary.file(tmp.resolve("out"), d));
            assertThat(s.device()).isEqualTo(d);
            assertThat(s.steps()).as("steps of device %d", d).isEqualTo(steps[d]);
            assertThat(s.samples()).isEqualTo(2 * steps[d]);
            assertThat(s.slow()).isEqualTo(slow[d]);
            assertThat(s.busySeconds()).isPositive();
        }

        Path trace = tmp.resolve("trace.csv");
        TraceFiles.merge(tmp.resolve("trace"), trace);
        List<String> lines = Files.readAllLines(trace);
        assertThat(lines.get(0)).isEqualTo("epoch,index,case,device,step,path");
        Map<String, String> seen = new HashMap<>();
        List<Set<Long>> stepsSeen = List.of(new HashSet<>(), new HashSet<>());
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            String previous = seen.put(f[0] + "," + f[1], f[2] + "," + f[3] + "," + f[5]);
            assertThat(previous).as("(epoch, index) delivered once: %s", line).isNull();
            stepsSeen.get(Integer.parseInt(f[3])).add(Long.parseLong(f[4]));
        }
        assertThat(seen).isEqualTo(expected);
        for (int d = 0; d < DEVICES; d++) {
            assertThat(stepsSeen.get(d))
                    .as("steps of device %d are 0, 1, ...", d)
                    .isEqualTo(LongStream.range(0, steps[d]).boxed().collect(Collectors.toSet()));
        }
    }

    /**
     * Device 0 throws once, on a step after its {@code snapshots}-th checkpoint; every device
     * counts its restores, and its steps and snapshots after the fault. Steps sleep {@code
     * stepMillis}, so that the throttled source, not training, sets the pace.
     */
    private record FailOnce(int snapshots, long stepMillis) implements AcceleratorFactory {
        @Override
        public Accelerator create(int device, int devices) {
            return new Accelerator() {
                private final SimulatedAccelerator step = new SimulatedAccelerator(stepMillis);

                @Override
                public StepResult train(Batch batch) throws Exception {
                    if (device == 0
                            && DEVICE0_SNAPSHOTS.get() >= snapshots
                            && FAILED.compareAndSet(false, true)) {
                        throw new IllegalStateException("injected device fault");
                    }
                    if (FAILED.get()) {
                        STEPS_AFTER_FAILURE.incrementAndGet();
                    }
                    return step.train(batch);
                }

                @Override
                public String kind() {
                    return "flaky";
                }

                @Override
                public byte[] snapshot() {
                    if (device == 0) {
                        DEVICE0_SNAPSHOTS.incrementAndGet();
                    }
                    if (FAILED.get()) {
                        SNAPSHOTS_AFTER_FAILURE.merge(device, 1, Integer::sum);
                    }
                    return new byte[] {(byte) device};
                }

                @Override
                public void restore(byte[] state) {
                    assertThat(state).containsExactly(device);
                    RESTORES.incrementAndGet();
                }
            };
        }
    }
}
