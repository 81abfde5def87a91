package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.spi.Workload;
import io.minato.workload.kits19.BlobCases;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.TransformConfig;
import io.minato.workload.kits19.Volume;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.plugable.SerializationDelegate;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoaderOperatorsTest {
    private static final Shape3 SHAPE = new Shape3(40, 36, 44);

    /** Small steps, so that a short deadline cuts samples off in the middle of the chain. */
    private static final TransformConfig CONFIG =
            TransformConfig.mlperf(16).withVoxelsPerStep(2000);

    @TempDir static Path dir;
    static CaseTable cases;
    static List<Volume> volumes;

    @BeforeAll
    static void writeCases() throws Exception {
        BlobCases blobs = BlobCases.write(dir, SHAPE, 100, 3);
        cases = blobs.table();
        volumes = blobs.volumes();
    }

    /** A harness around a worker, set up and opened. */
    static <I> OneInputStreamOperatorTestHarness<I, PreparedSample> opened(
            PreparingOperator<I> worker) throws Exception {
        var h = new OneInputStreamOperatorTestHarness<>(worker);
        h.open();
        return h;
    }

    /**
     * With no slow worker in its TaskManager (a harness registers none), a fast worker sends its
     * cut-off samples to every slow worker in turn, from its own index on, as their state's bytes;
     * the edge's partitioner takes each to the worker it names.
     */
    @Test
    void shouldSendCutOffSamplesToEverySlowWorkerInTurnFromItsOwnIndex() throws Exception {
        AugmentOperator worker =
                new AugmentOperator(
                        cases.workload(CONFIG), TimeoutPolicy.parse("0.000001"), 1, 3, false);
        List<UnfinishedSample> cut = new ArrayList<>();
        try (var h = new OneInputStreamOperatorTestHarness<>(worker, 2, 2, 1)) {
            h.open();
            for (int i = 0; i < 5; i++) {
                h.processElement(new SampleTask(7, 1, i, i % 3), i);
            }
            for (StreamRecord<UnfinishedSample> r : h.getSideOutput(AugmentOperator.SLOW)) {
                cut.add(r.getValue());
            }
        }
        assertThat(cut).extracting(UnfinishedSample::slowWorker).containsExactly(1, 2, 0, 1, 2);
        assertThat(cut).allMatch(u -> u.steps() == null && u.state() != null);

        SlowWorkerPartitioner edge = new SlowWorkerPartitioner();
        edge.setup(3);
        var delegate = new SerializationDelegate<StreamRecord<UnfinishedSample>>(null);
        for (UnfinishedSample u : cut) {
            delegate.setInstance(new StreamRecord<>(u));
            assertThat(edge.selectChannel(delegate)).isEqualTo(u.slowWorker());
        }
        assertThat(edge.isPointwise()).isFalse();
        assertThat(edge.isSupportsUnalignedCheckpoint()).isTrue();
        UnfinishedSample u = cut.get(0);
        delegate.setInstance(
                new StreamRecord<>(
                        new UnfinishedSample(u.task(), null, u.state(), u.prepCpuNanos(), 5)));
        assertThatThrownBy(() -> edge.selectChannel(delegate))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("slow worker 5, not one of the job's 3");
    }

    @Test
    void shouldPrepareUnderTheSchedulerGivingEveryPermitBackAndLeaveNoSchedulerBehind()
            throws Exception {
        List<UnfinishedSample> unfinished = new ArrayList<>();
        String key;
        try (var h =
                opened(
                        new AugmentOperator(
                                cases.workload(CONFIG),
                                TimeoutPolicy.parse("60000"),
                                2,
                                1,
                                true))) {
            key =
                    WorkerScheduler.inTaskManager(
                            WorkerScheduler.key(
                                    h.getEnvironment().getJobInfo().getJobId().toString(),
                                    h.getEnvironment().getTaskInfo().getAttemptNumber()),
                            h.getOperator().getMetricGroup());
            WorkerScheduler scheduler = WorkerScheduler.of(key);
            for (int i = 0; i < 6; i++) {
                h.processElement(new SampleTask(7, 0, i, i % 3), i);
            }
            assertThat(h.extractOutputValues()).hasSize(6);
            assertThat(scheduler.running()).isZero();
            assertThat(scheduler.active()).isEqualTo(1); // one worker registered
        }
        try (var h =
                opened(
                        new AugmentOperator(
                                cases.workload(CONFIG),
                                TimeoutPolicy.parse("0.000001"),
                                2,
                                1,
                                true))) {
            for (int i = 0; i < 4; i++) {
                h.processElement(new SampleTask(7, 1, i, i % 3), i);
            }
            for (StreamRecord<UnfinishedSample> r : h.getSideOutput(AugmentOperator.SLOW)) {
                unfinished.add(r.getValue());
            }
        }
        assertThat(unfinished).hasSize(4);
        try (var h = opened(new SlowPath(cases.workload(CONFIG), 2, true))) {
            for (UnfinishedSample u : unfinished) {
                h.processElement(u, 0);
            }
            List<PreparedSample> done = h.extractOutputValues();
            assertThat(done).hasSize(4).allMatch(s -> s.path() == SamplePath.SLOW);
            for (PreparedSample s : done) {
                Patch expected =
                        Preparation.prepare(
                                s.task().key(), volumes.get(s.task().caseIndex()), CONFIG);
                assertThat(s.patch().sameContent(expected)).as("sample %s", s.task()).isTrue();
            }
        }
        // Every worker closed: the job's scheduler is gone.
        assertThat(WorkerScheduler.live(key)).isFalse();
    }

    @Test
    void shouldEmitSamplesDoneInTimeOnTheMainOutput() throws Exception {
        try (OneInputStreamOperatorTestHarness<SampleTask, PreparedSample> h =
                opened(
                        new AugmentOperator(
                                cases.workload(CONFIG), TimeoutPolicy.parse("60000"), 3))) {
            for (int i = 0; i < 12; i++) {
                h.processElement(new SampleTask(7, 0, i, i % 3), i);
            }
            assertThat(h.extractOutputValues())
                    .hasSize(12)
                    .allMatch(s -> s.path() == SamplePath.FAST)
                    .extracting(PreparedSample::device)
                    .containsExactly(0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2); // dealt in turn
            assertThat(h.getSideOutput(AugmentOperator.SLOW)).isNullOrEmpty();
        }
    }

    @Test
    void
            shouldSendSamplesPastTheDeadlineUnfinishedToTheSideOutputAndTheSlowPathFinishesThemBitIdentically()
                    throws Exception {
        List<UnfinishedSample> unfinished = new ArrayList<>();
        try (OneInputStreamOperatorTestHarness<SampleTask, PreparedSample> h =
                opened(
                        new AugmentOperator(
                                cases.workload(CONFIG), TimeoutPolicy.parse("0.000001"), 2))) {
            for (int i = 0; i < 12; i++) {
                h.processElement(new SampleTask(7, 0, i, i % 3), i);
            }
            assertThat(h.extractOutputValues()).isEmpty();
            for (StreamRecord<UnfinishedSample> r : h.getSideOutput(AugmentOperator.SLOW)) {
                unfinished.add(r.getValue());
            }
        }
        // Left at the first step boundary: one step done, the rest still to do, no volume carried.
        // The harness copies side output records: the states arrive as their bytes.
        assertThat(unfinished).hasSize(12);
        Workload<?> workload = cases.workload(CONFIG);
        for (UnfinishedSample u : unfinished) {
            Preparation p = (Preparation) workload.read(u.state());
            assertThat(p.step()).isNotEqualTo(Preparation.Step.START);
            assertThat(p.isDone()).isFalse();
        }

        try (OneInputStreamOperatorTestHarness<UnfinishedSample, PreparedSample> h =
                opened(new SlowPath(cases.workload(CONFIG), 2))) {
            for (UnfinishedSample u : unfinished) {
                h.processElement(u, 0);
            }
            List<PreparedSample> done = h.extractOutputValues();
            assertThat(done)
                    .hasSize(12)
                    .allMatch(s -> s.path() == SamplePath.SLOW && s.prepCpuNanos() > 0);
            assertThat(done)
                    .extracting(PreparedSample::device)
                    .containsExactly(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1);
            for (PreparedSample s : done) {
                Patch expected =
                        Preparation.prepare(
                                s.task().key(), volumes.get(s.task().caseIndex()), CONFIG);
                assertThat(s.patch().sameContent(expected)).as("sample %s", s.task()).isTrue();
            }
        }
    }

    /**
     * A case file truncated after the run mapped it: reading it faults, which the JVM reports as an
     * InternalError and Flink answers by stopping the process. It must be one line instead.
     */
    @Test
    void shouldNameTheCaseWhoseFileWasTruncatedWhileTheRunReadIt(@TempDir Path own)
            throws Exception {
        BlobCases blobs = BlobCases.write(own, SHAPE, 300, 1);
        CaseTable table = blobs.table();
        try (OneInputStreamOperatorTestHarness<SampleTask, PreparedSample> h =
                opened(
                        new AugmentOperator(
                                table.workload(CONFIG), TimeoutPolicy.parse("60000"), 1))) {
            h.processElement(new SampleTask(7, 0, 0, 0), 0);
            assertThat(h.extractOutputValues()).hasSize(1);
            Path image = table.files(0).image();
            try (var channel =
                    java.nio.channels.FileChannel.open(
                            image, java.nio.file.StandardOpenOption.WRITE)) {
                channel.truncate(200); // the header only
            }
            assertThatThrownBy(
                            () -> {
                                for (int i = 1; i < 8; i++) {
                                    h.processElement(new SampleTask(7, 0, i, 0), i);
                                }
                            })
                    .isInstanceOf(io.minato.data.BadInputException.class)
                    .hasMessageStartingWith(image.toString())
                    .hasMessageContaining("changed while the run read it")
                    .hasMessageNotContaining("\n");
        }
    }

    @Test
    void shouldKeepPartialBatchesInKeyedStateAcrossASnapshotAndRestore() throws Exception {
        DeviceKeys keys = new DeviceKeys(2);
        OperatorSubtaskState snapshot;
        try (KeyedOneInputStreamOperatorTestHarness<Integer, PreparedSample, Batch> h =
                assembler(keys)) {
            h.open();
            for (int i = 0; i < 5; i++) {
                h.processElement(sample(2 * i + 1, 1), i);
            }
            List<Batch> batches = h.extractOutputValues();
            assertThat(batches)
                    .extracting(Batch::device, Batch::sequence)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple(1, 0L),
                            org.assertj.core.groups.Tuple.tuple(1, 1L));
            assertThat(batches.get(1).samples())
                    .extracting(s -> s.task().index())
                    .containsExactly(5L, 7L);
            snapshot = h.snapshot(1, 10);
        }
        try (KeyedOneInputStreamOperatorTestHarness<Integer, PreparedSample, Batch> h =
                assembler(keys)) {
            h.initializeState(snapshot);
            h.open();
            h.processElement(sample(11, 1), 20);
            List<Batch> batches = h.extractOutputValues();
            assertThat(batches).hasSize(1);
            assertThat(batches.get(0).sequence()).isEqualTo(2);
            assertThat(batches.get(0).samples())
                    .extracting(s -> s.task().index())
                    .containsExactly(9L, 11L);
        }
    }

    @Test
    void shouldSendEachDevicesPartialBatchAtTheEndOfTheInputAndDropNothing() throws Exception {
        DeviceKeys keys = new DeviceKeys(3);
        try (KeyedOneInputStreamOperatorTestHarness<Integer, PreparedSample, Batch> h =
                assembler(keys)) {
            h.open();
            h.processElement(sample(0, 2), 0);
            h.processElement(sample(1, 0), 1);
            h.processElement(sample(2, 2), 2); // device 2's batch 0
            h.processElement(sample(3, 2), 3);
            h.processElement(sample(4, 2), 4); // device 2's batch 1
            h.processElement(sample(5, 2), 5);
            assertThat(h.extractOutputValues())
                    .extracting(Batch::device, Batch::sequence)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple(2, 0L),
                            org.assertj.core.groups.Tuple.tuple(2, 1L));
            h.endInput();
            List<Batch> batches = h.extractOutputValues();
            assertThat(batches.subList(2, batches.size()))
                    .extracting(Batch::device, Batch::sequence, b -> b.samples().size())
                    .containsExactlyInAnyOrder(
                            org.assertj.core.groups.Tuple.tuple(0, 0L, 1),
                            org.assertj.core.groups.Tuple.tuple(2, 2L, 1));
            assertThat(batches)
                    .flatExtracting(Batch::samples)
                    .extracting(s -> s.task().index())
                    .containsExactlyInAnyOrder(0L, 1L, 2L, 3L, 4L, 5L);
        }
    }

    @Test
    void shouldDealReadySamplesToTheDevicesInTurnFromEachWorkersOwnStart() {
        for (int devices = 1; devices <= 4; devices++) {
            for (int worker = 0; worker < 6; worker++) {
                DeviceDealer dealer = DeviceDealer.inTurn(devices, worker);
                int[] counts = new int[devices];
                for (int i = 0; i < 10 * devices; i++) {
                    int device = dealer.next(new SampleTask(7, i % 3, i, 0));
                    assertThat(device).isEqualTo((worker + i) % devices);
                    counts[device]++;
                }
                assertThat(counts).containsOnly(10);
            }
        }
        assertThatThrownBy(() -> DeviceDealer.inTurn(0, 0)).hasMessageContaining("devices >= 1");
    }

    @Test
    void shouldDealEachSampleByItsPositionInTheRunWhicheverWorkerFinishesIt() {
        // Epochs of 5 samples over 3 devices: position epoch * 5 + index, mod 3.
        DeviceDealer first = DeviceDealer.bySample(3, 5);
        DeviceDealer second = DeviceDealer.bySample(3, 5);
        int[] counts = new int[3];
        for (int epoch = 0; epoch < 3; epoch++) {
            for (long index = 4; index >= 0; index--) { // in any order
                SampleTask task = new SampleTask(7, epoch, index, 0);
                int device = first.next(task);
                assertThat(device).isEqualTo((int) ((epoch * 5 + index) % 3));
                assertThat(second.next(task)).isEqualTo(device);
                counts[device]++;
            }
        }
        assertThat(counts).containsOnly(5);
        assertThatThrownBy(() -> DeviceDealer.bySample(2, 0))
                .hasMessageContaining("samples per epoch must be >= 1");
    }

    @Test
    void shouldKeyASampleByTheDeviceItWasDealtAndRefuseOneDealtNowhere() {
        DeviceKeys keys = new DeviceKeys(3);
        DeviceOf deviceOf = new DeviceOf(keys);
        for (int d = 0; d < 3; d++) {
            assertThat(keys.deviceOf(deviceOf.getKey(sample(5, d)))).isEqualTo(d);
        }
        PreparedSample undealt =
                new PreparedSample(new SampleTask(7, 2, 5, 0), SamplePath.FAST, 1, null);
        assertThatThrownBy(() -> deviceOf.getKey(undealt))
                .hasMessage(
                        "sample (epoch 2, index 5) was dealt to device -1, not one of the job's 3");
        assertThatThrownBy(() -> deviceOf.getKey(sample(5, 3))).hasMessageContaining("device 3");
    }

    @Test
    void shouldPinEachDeviceToItsOwnSubtask() {
        for (int devices = 1; devices <= 16; devices++) {
            DeviceKeys keys = new DeviceKeys(devices);
            Set<Integer> subtasks = new HashSet<>();
            for (int d = 0; d < devices; d++) {
                int subtask =
                        KeyGroupRangeAssignment.assignKeyToParallelOperator(
                                keys.keyOf(d), DeviceKeys.MAX_PARALLELISM, devices);
                assertThat(subtask).isEqualTo(d);
                assertThat(keys.deviceOf(keys.keyOf(d))).isEqualTo(d);
                subtasks.add(subtask);
            }
            assertThat(subtasks).hasSize(devices);
        }
    }

    @Test
    void shouldAdaptTheTimeoutSoThatAboutTheSlowestTenthGoesSlow() {
        TimeoutPolicy p = TimeoutPolicy.parse("auto");
        assertThat(p.timeoutNanos()).isEqualTo(Long.MAX_VALUE); // no deadline while warming up
        java.util.SplittableRandom r = new java.util.SplittableRandom(1);
        int slow = 0;
        int n = 5000;
        for (int i = 0; i < n; i++) {
            // 80 % take ~1 ms, 20 % 50-60 ms: the deadline settles inside the slow mode, where
            // the slowest tenth begins, and about a tenth goes slow.
            long t =
                    r.nextInt(100) < 80
                            ? 1_000_000 + r.nextInt(200_000)
                            : 50_000_000 + r.nextInt(10_000_000);
            if (t > p.timeoutNanos()) {
                slow++;
                p.cutOff();
            } else {
                p.finished(t);
            }
        }
        assertThat(slow / (double) n).isBetween(0.07, 0.14);
        assertThat(p.timeoutNanos()).isBetween(45_000_000L, 62_000_000L);
    }

    /**
     * The window's quantile kept in order one value at a time is the quantile of the last 256
     * outcomes sorted afresh, through warm-up, wrap-around, repeated values and cut-offs.
     */
    @Test
    void shouldTakeTheQuantileOfTheLastWindowOfOutcomes() {
        TimeoutPolicy p = TimeoutPolicy.parse("auto");
        java.util.SplittableRandom r = new java.util.SplittableRandom(5);
        java.util.ArrayDeque<Long> last = new java.util.ArrayDeque<>();
        for (int i = 0; i < 3000; i++) {
            long t = r.nextInt(100) < 5 ? Long.MAX_VALUE : 1_000_000L * (1 + r.nextInt(40));
            if (t == Long.MAX_VALUE) {
                p.cutOff();
            } else {
                p.finished(t);
            }
            last.addLast(t);
            if (last.size() > 256) {
                last.removeFirst();
            }
            if (last.size() >= 16) {
                long[] sorted = last.stream().mapToLong(Long::longValue).sorted().toArray();
                long q = sorted[(int) Math.ceil(0.9 * sorted.length) - 1];
                if (q != Long.MAX_VALUE) {
                    assertThat(p.timeoutNanos()).as("after %d outcomes", i + 1).isEqualTo(q);
                }
            }
        }
    }

    /**
     * A burst of cut-offs leaves the window censored for a while: the deadline widens with each
     * cut-off only, never past a minute, and settles back once the burst leaves the window.
     */
    @Test
    void shouldWidenTheTimeoutOnCutOffsOnlyAndSettleAfterABurst() {
        TimeoutPolicy p = TimeoutPolicy.parse("auto");
        for (int i = 0; i < 100; i++) {
            p.finished(5_000_000);
        }
        assertThat(p.timeoutNanos()).isEqualTo(5_000_000);
        for (int i = 0; i < 200; i++) {
            p.cutOff();
            assertThat(p.timeoutNanos()).isBetween(5_000_000L, 60_000_000_000L);
        }
        assertThat(p.timeoutNanos()).isEqualTo(60_000_000_000L);
        long widened = p.timeoutNanos();
        for (int i = 0; i < 100; i++) {
            p.finished(5_000_000);
            if (i < 50) {
                assertThat(p.timeoutNanos())
                        .as("a finished sample does not widen it")
                        .isEqualTo(widened);
            }
        }
        for (int i = 0; i < 300; i++) {
            p.finished(5_000_000);
        }
        assertThat(p.timeoutNanos()).isEqualTo(5_000_000);
    }

    @Test
    void shouldKeepAFixedTimeoutAndRefuseABadOne() {
        TimeoutPolicy p = TimeoutPolicy.parse("25");
        p.cutOff();
        p.finished(1);
        assertThat(p.timeoutNanos()).isEqualTo(25_000_000);
        assertThatThrownBy(() -> TimeoutPolicy.parse("soon"))
                .hasMessageContaining("--timeout must be 'auto'");
        assertThatThrownBy(() -> TimeoutPolicy.parse("-3")).hasMessageContaining("positive");
    }

    private static KeyedOneInputStreamOperatorTestHarness<Integer, PreparedSample, Batch> assembler(
            DeviceKeys keys) throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(
                new BatchAssembler(keys, 2), new DeviceOf(keys), Types.INT);
    }

    private static PreparedSample sample(long index, int device) {
        Patch patch = new Patch(Shape3.cube(2), new float[8], new byte[8]);
        return new PreparedSample(
                new SampleTask(7, 0, index, 0), SamplePath.FAST, 1000, patch, device);
    }
}
