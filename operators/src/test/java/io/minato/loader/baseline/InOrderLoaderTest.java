package io.minato.loader.baseline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.workload.kits19.BlobCases;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.SyntheticVolumes;
import io.minato.workload.kits19.TransformConfig;
import io.minato.workload.kits19.Volume;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntUnaryOperator;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InOrderLoaderTest {
    private static final long SEED = 11;
    private static final Shape3 SHAPE = new Shape3(40, 36, 44);
    private static final TransformConfig CONFIG = TransformConfig.mlperf(16);

    @TempDir static Path dir;
    static CaseTable cases;
    static List<Volume> volumes;

    @BeforeAll
    static void writeCases() throws Exception {
        BlobCases blobs = BlobCases.write(dir, SHAPE, 200, 3);
        cases = blobs.table();
        volumes = blobs.volumes();
    }

    @Test
    void shouldEmitBatchesInOrderToRoundRobinDevicesWithTheSamplesOfTheirFixedLists()
            throws Exception {
        // Cloned as the job graph ships it, so the operator must serialize.
        InOrderLoader op =
                InstantiationUtil.clone(
                        InOrderLoader.builder()
                                .setWorkload(cases.workload(CONFIG))
                                .setBatchSize(3)
                                .setDevices(2)
                                .setWorkers(3)
                                .build());
        List<Batch> out;
        try (var h = harness(op)) {
            h.open();
            for (int i = 0; i < 15; i++) {
                h.processElement(task(i, i % 3), i);
            }
            h.endInput();
            out = h.extractOutputValues();
        }
        assertThat(out)
                .extracting(Batch::device, Batch::sequence)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(0, 0L),
                        org.assertj.core.groups.Tuple.tuple(1, 0L),
                        org.assertj.core.groups.Tuple.tuple(0, 1L),
                        org.assertj.core.groups.Tuple.tuple(1, 1L),
                        org.assertj.core.groups.Tuple.tuple(0, 2L));
        for (int k = 0; k < out.size(); k++) {
            assertThat(indexes(out.get(k))).containsExactly(3L * k, 3L * k + 1, 3L * k + 2);
        }
        assertPreparedBitIdentically(out, CONFIG);
        assertThat(out)
                .flatExtracting(Batch::samples)
                .allMatch(s -> s.path() == SamplePath.FAST && s.prepCpuNanos() > 0);
    }

    @Test
    void shouldHoldABatchThatIsReadyBehindASlowerEarlierOne() throws Exception {
        GatedLoader op = new GatedLoader(builder(2, 1, 2), 2);
        try (var h = harness(op)) {
            h.open();
            long fed = System.nanoTime();
            feed(h, 0, 4, i -> i % 3); // batch 0 on worker 0 (held), batch 1 on worker 1
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (op.readyBehindHead() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertThat(op.readyBehindHead()).as("batch 1 ready behind batch 0").isEqualTo(1);
            assertThat(op.holdingBack()).as("the line is held").isTrue();
            Thread.sleep(20);
            h.processElement(task(4, 0), 4);
            assertThat(h.extractOutputValues()).as("nothing overtakes batch 0").isEmpty();
            op.gate.countDown();
            h.endInput();
            long heldAtMost = System.nanoTime() - fed;
            List<Batch> out = h.extractOutputValues();
            assertThat(out).extracting(Batch::sequence).containsExactly(0L, 1L);
            assertThat(op.holdingBack()).isFalse();
            // Batch 0 ended the hold, batch 1 was kept back by it: both carry it.
            assertThat(out)
                    .extracting(Batch::heldBackNanos)
                    .allSatisfy(
                            held ->
                                    assertThat(held)
                                            .isBetween(
                                                    Duration.ofMillis(20).toNanos(), heldAtMost));
        }
    }

    @Test
    void shouldKeepAtMostPrefetchFactorTimesWorkersBatchesOutstanding() throws Exception {
        // W = 2 and the default prefetch factor 2: at most 4 batches dispatched, not emitted.
        GatedLoader op = new GatedLoader(builder(2, 2, 2), 2);
        try (var h = harness(op)) {
            h.open();
            feed(h, 0, 8, i -> i % 3);
            assertThat(op.outstanding()).isEqualTo(4);
            assertThat(h.extractOutputValues()).isEmpty();

            // Batch 4 needs room: dispatching it blocks on batch 0 until the gate opens.
            AtomicBoolean opened = new AtomicBoolean();
            Thread opener =
                    new Thread(
                            () -> {
                                sleep(200);
                                opened.set(true);
                                op.gate.countDown();
                            });
            opener.start();
            feed(h, 8, 10, i -> i % 3);
            assertThat(opened).as("blocked until batch 0 could finish").isTrue();
            assertThat(h.extractOutputValues()).extracting(Batch::sequence).startsWith(0L);
            opener.join();

            for (int i = 10; i < 20; i++) {
                h.processElement(task(i, i % 3), i);
                assertThat(op.outstanding()).isLessThanOrEqualTo(4);
            }
            h.endInput();
            assertThat(op.maxOutstanding()).isEqualTo(4);
            assertThat(op.outstanding()).isZero();
            List<Batch> out = h.extractOutputValues();
            assertThat(out).hasSize(10);
            for (int k = 0; k < out.size(); k++) {
                assertThat(out.get(k).device()).isEqualTo(k % 2);
                assertThat(out.get(k).sequence()).isEqualTo(k / 2);
                assertThat(indexes(out.get(k))).containsExactly(2L * k, 2L * k + 1);
            }
        }
    }

    /** One worker prepares the batches in their order: nothing is ever held back. */
    @Test
    void shouldHandOutBatchesThatNothingHeldBackAsHeldForNoTime() throws Exception {
        try (var h = harness(loader(2, 2, 1))) {
            h.open();
            feed(h, 0, 8, i -> i % 3);
            h.endInput();
            assertThat(h.extractOutputValues())
                    .hasSize(4)
                    .extracting(Batch::heldBackNanos)
                    .containsOnly(0L);
        }
    }

    @Test
    void shouldEmitEverythingOutstandingAtEndOfInputAndDropOnlyTheFinalPartialBatch()
            throws Exception {
        InOrderLoader op = loader(4, 1, 2);
        try (var h = harness(op)) {
            h.open();
            feed(h, 0, 23, i -> i % 3);
            h.endInput();
            List<Batch> out = h.extractOutputValues();
            assertThat(out).extracting(Batch::sequence).containsExactly(0L, 1L, 2L, 3L, 4L);
            assertThat(out)
                    .flatExtracting(InOrderLoaderTest::indexes)
                    .hasSize(20)
                    .doesNotContain(20L, 21L, 22L);
            assertThat(op.samplesDropped()).isEqualTo(3);
            assertThat(op.outstanding()).isZero();
        }
    }

    @Test
    void shouldContinueTheBatchNumberingAndLoseNoTaskAfterARestore() throws Exception {
        IntUnaryOperator caseOf = i -> i % 3;
        List<Batch> uninterrupted;
        try (var h = harness(loader(3, 2, 2))) {
            h.open();
            feed(h, 0, 20, caseOf);
            h.endInput();
            uninterrupted = h.extractOutputValues();
        }

        List<Batch> resumed = new ArrayList<>();
        OperatorSubtaskState snapshot;
        try (var h = harness(loader(3, 2, 2))) {
            h.open();
            feed(h, 0, 8, caseOf); // two batches and two tasks of the third
            h.prepareSnapshotPreBarrier(1);
            resumed.addAll(h.extractOutputValues());
            assertThat(resumed).as("drained before the barrier").hasSize(2);
            snapshot = h.snapshot(1, 100);
            // Processed after the checkpoint, then lost in a failure: the source replays them.
            feed(h, 8, 14, caseOf);
        }
        try (var h = harness(loader(3, 2, 2))) {
            h.initializeState(snapshot);
            h.open();
            feed(h, 8, 20, caseOf);
            h.endInput();
            resumed.addAll(h.extractOutputValues());
        }
        assertThat(resumed).hasSize(6);
        for (int k = 0; k < resumed.size(); k++) {
            Batch r = resumed.get(k);
            Batch u = uninterrupted.get(k);
            assertThat(r.device()).isEqualTo(u.device());
            assertThat(r.sequence()).isEqualTo(u.sequence());
            assertThat(indexes(r)).isEqualTo(indexes(u));
        }
        assertPreparedBitIdentically(resumed, CONFIG);
    }

    @Test
    void shouldFailWithTheMissingFileNamedInsteadOfHanging(@TempDir Path own) throws Exception {
        List<CaseFiles> files = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            files.add(SyntheticVolumes.write(own, "case_0010" + c, volumes.get(c)));
        }
        Path missing = files.get(1).image();
        Files.delete(missing);
        CaseTable broken = new CaseTable(files);
        InOrderLoader op =
                InOrderLoader.builder()
                        .setWorkload(broken.workload(CONFIG))
                        .setBatchSize(2)
                        .setDevices(1)
                        .setWorkers(1)
                        .optPrefetchFactor(1)
                        .build();
        assertTimeoutPreemptively(
                Duration.ofSeconds(10),
                () -> {
                    try (var h = harness(op)) {
                        h.open();
                        // Batch 1 reads the deleted file; dispatching batch 2 waits for it.
                        assertThatThrownBy(() -> feed(h, 0, 8, i -> i < 2 ? 0 : 1))
                                .hasMessageContaining(missing.toString());
                    }
                });
    }

    /**
     * A worker that fails after the last task has come (nothing else will call the operator) posts
     * mail to the task, which throws its failure there: the task fails at once, not at the next
     * checkpoint.
     */
    @Test
    void shouldPostAWorkersFailureToTheTaskWithoutWaitingForAnotherElement(@TempDir Path own)
            throws Exception {
        List<CaseFiles> files = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            files.add(SyntheticVolumes.write(own, "case_0010" + c, volumes.get(c)));
        }
        Path missing = files.get(1).image();
        Files.delete(missing);
        // Held until both tasks are in: a worker failing while the second is fed would fail that
        // element instead of posting mail.
        GatedLoader op =
                new GatedLoader(
                        InOrderLoader.builder()
                                .setWorkload(new CaseTable(files).workload(CONFIG))
                                .setBatchSize(2)
                                .setDevices(1)
                                .setWorkers(1),
                        2);
        try (var h = harness(op)) {
            h.open();
            feed(h, 0, 2, i -> 1); // one batch, of the missing case: the last tasks to come
            op.gate.countDown();
            var mailbox = h.getTaskMailbox();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            Optional<Mail> mail = Optional.empty();
            while (mail.isEmpty() && System.nanoTime() < deadline) {
                mail = mailbox.tryTake(TaskMailbox.MIN_PRIORITY);
                if (mail.isEmpty()) {
                    sleep(10);
                }
            }
            assertThat(mail).as("the worker's failure, as mail").isPresent();
            var posted = mail.get();
            assertThatThrownBy(posted::run).hasMessageContaining(missing.toString());
        }
    }

    private static InOrderLoader loader(int batchSize, int devices, int workers) {
        return builder(batchSize, devices, workers).build();
    }

    private static InOrderLoader.Builder builder(int batchSize, int devices, int workers) {
        return InOrderLoader.builder()
                .setWorkload(cases.workload(CONFIG))
                .setBatchSize(batchSize)
                .setDevices(devices)
                .setWorkers(workers);
    }

    /** Holds the samples with index below {@code held} until the test opens the gate. */
    private static final class GatedLoader extends InOrderLoader {
        private static final long serialVersionUID = 1L;
        private final transient CountDownLatch gate = new CountDownLatch(1);
        private final long held;

        GatedLoader(InOrderLoader.Builder b, long held) {
            super(b);
            this.held = held;
        }

        @Override
        PreparedSample prepareSample(SampleTask task) throws BadInputException {
            if (task.index() < held) {
                try {
                    if (!gate.await(10, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the test never opened the gate");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            return super.prepareSample(task);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static OneInputStreamOperatorTestHarness<SampleTask, Batch> harness(InOrderLoader op)
            throws Exception {
        return new OneInputStreamOperatorTestHarness<>(op);
    }

    private static void feed(
            OneInputStreamOperatorTestHarness<SampleTask, Batch> h,
            int from,
            int to,
            IntUnaryOperator caseOf)
            throws Exception {
        for (int i = from; i < to; i++) {
            h.processElement(task(i, caseOf.applyAsInt(i)), i);
        }
    }

    private static SampleTask task(long index, int caseIndex) {
        return new SampleTask(SEED, 0, index, caseIndex);
    }

    private static List<Long> indexes(Batch b) {
        return b.samples().stream().map(s -> s.task().index()).toList();
    }

    private static void assertPreparedBitIdentically(List<Batch> batches, TransformConfig config) {
        for (Batch b : batches) {
            for (PreparedSample s : b.samples()) {
                Patch expected =
                        Preparation.prepare(
                                s.task().key(), volumes.get(s.task().caseIndex()), config);
                assertThat(s.patch().sameContent(expected)).as("sample %s", s.task()).isTrue();
            }
        }
    }
}
