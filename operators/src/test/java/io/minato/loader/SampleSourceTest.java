package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.minato.data.EpochOrder;
import io.minato.sample.SampleTask;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.mocks.MockSplitEnumeratorContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.UserCodeClassLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SampleSourceTest {

    /** Every sample at exactly one position; share j deals samples j, j + count, ... in order. */
    @ParameterizedTest(name = "{0} samples in {1} shares")
    @CsvSource({"1,1", "7,1", "1,3", "12,3", "13,3", "14,3", "5,8", "480,2", "1000,7"})
    void shouldPlaceEverySampleOnceInInterleavedShares(long total, int count) {
        SampleSource.Shares shares = new SampleSource.Shares(total, count);
        Set<Long> seen = new HashSet<>();
        for (int j = 0; j < count; j++) {
            long expected = j;
            for (long p = j * shares.length(); p < (j + 1) * shares.length(); p++) {
                long n = shares.sampleAt(p);
                if (n < 0) {
                    assertThat(expected)
                            .as("only the end of a share is empty")
                            .isGreaterThanOrEqualTo(total);
                    continue;
                }
                assertThat(n).isEqualTo(expected);
                assertThat(seen.add(n)).as("sample %d placed twice", n).isTrue();
                expected += count;
            }
        }
        assertThat(seen).hasSize((int) total);
    }

    /** The real source at parallelism 3: each (epoch, index) once, with its epoch's case. */
    @Test
    void shouldEmitEveryTaskOfEveryEpochOnceAcrossItsShares() throws Exception {
        int cases = 5;
        int epochs = 4;
        long seed = 3;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(3);
        List<SampleTask> tasks = new ArrayList<>();
        try (CloseableIterator<SampleTask> it =
                SampleSource.tasks(env, cases, epochs, seed, 3).executeAndCollect()) {
            it.forEachRemaining(tasks::add);
        }
        Set<String> seen = new HashSet<>();
        for (SampleTask t : tasks) {
            assertThat(seen.add(t.epoch() + "," + t.index())).as("twice: %s", t).isTrue();
            assertThat(t.seed()).isEqualTo(seed);
            assertThat(t.caseIndex())
                    .isEqualTo(EpochOrder.permutation(seed, t.epoch(), cases)[(int) t.index()]);
        }
        assertThat(seen).hasSize(cases * epochs);
    }

    /**
     * Each reader gets its own share and no other, whichever asks first: a reader that started
     * early must not take a late one's share (a worker in another TaskManager then prepared
     * nothing). A share given back after a failure goes to its reader again.
     */
    @Test
    void shouldHandEachReaderItsOwnShareOnly() throws Exception {
        SampleSource.ShareSource source =
                new SampleSource.ShareSource(new SampleSource.Shares(10, 2));
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.createEnumerator(context)) {
            enumerator.handleSplitRequest(1, "early");
            enumerator.handleSplitRequest(1, "early");
            assertThat(assigned(context, 1)).containsExactly("1");
            assertThat(context.hasNoMoreSplits(1)).isTrue();

            enumerator.handleSplitRequest(0, "late");
            assertThat(assigned(context, 0)).containsExactly("0");

            // Reader 0 fails: its share comes back, for reader 0 only.
            NumberSequenceSplit back = new NumberSequenceSplit("0", 3, 4);
            enumerator.addSplitsBack(List.of(back), 0);
            enumerator.handleSplitRequest(1, "early");
            enumerator.handleSplitRequest(0, "late");
            assertThat(assigned(context, 0)).containsExactly("0", "0");
            assertThat(assigned(context, 1)).containsExactly("1");
        }
    }

    /**
     * Flink 2.3 can run an unaligned checkpoint's trigger before an assignment already in the
     * reader's mailbox: the reader's part of the checkpoint lacks its share, and the enumerator's
     * part no longer lists it. Restored from that checkpoint, with the enumerator as it is (the
     * reader's task alone restarted) or as it was checkpointed, the reader gets its whole share
     * again.
     */
    @ParameterizedTest(name = "enumerator restored: {0}")
    @ValueSource(booleans = {false, true})
    void shouldHandAShareAgainThatACheckpointTookBeforeItArrived(boolean restoreEnumerator)
            throws Exception {
        SampleSource.ShareSource source = source();
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.createEnumerator(context)) {
            Attempt first = new Attempt(source, List.of());
            first.start(enumerator);
            assertThat(assigned(context, 0)).containsExactly("0");
            List<NumberSequenceSplit> readerPart = first.reader.snapshotState(1); // before it
            Collection<NumberSequenceSplit> enumeratorPart = enumerator.snapshotState(1);
            first.reader.addSplits(lastAssigned(context, 0));
            first.readAll(); // then lost with the failure

            try (MockSplitEnumeratorContext<NumberSequenceSplit> restoredContext =
                            new MockSplitEnumeratorContext<>(2);
                    var restored =
                            restoreEnumerator
                                    ? source.restoreEnumerator(restoredContext, enumeratorPart)
                                    : enumerator) {
                var c = restoreEnumerator ? restoredContext : context;
                int before = assigned(c, 0).size();
                Attempt second = new Attempt(source, readerPart);
                restored.addReader(0);
                second.start(restored);
                assertThat(assigned(c, 0)).as("handed out again").hasSize(before + 1);
                assertThat(lastAssigned(c, 0))
                        .extracting(NumberSequenceSplit::from, NumberSequenceSplit::to)
                        .containsExactly(tuple(0L, 4L));
                second.reader.addSplits(lastAssigned(c, 0));
                second.readAll();
                second.deliverTo(restored);
                assertThat(second.read).containsExactly(0L, 1L, 2L, 3L, 4L);
            }
        }
    }

    /**
     * A share that both parts of a checkpoint know of (the reader had it; the enumerator had handed
     * it out, or had heard it was read to its end) is read once after a restore: the reader reports
     * what it restored before it asks for another share.
     */
    @ParameterizedTest(name = "read before the checkpoint: {0}")
    @ValueSource(ints = {2, 5})
    void shouldReadAShareThatBothPartsOfACheckpointKnowOnce(int readBefore) throws Exception {
        SampleSource.ShareSource source = source();
        List<NumberSequenceSplit> readerPart;
        Collection<NumberSequenceSplit> enumeratorPart;
        List<Long> read = new ArrayList<>();
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.createEnumerator(context)) {
            Attempt first = new Attempt(source, List.of());
            first.start(enumerator);
            first.reader.addSplits(lastAssigned(context, 0));
            first.read(readBefore);
            first.deliverTo(enumerator); // at 5 it has not asked for more yet
            readerPart = first.reader.snapshotState(1);
            enumeratorPart = enumerator.snapshotState(1);
            read.addAll(first.read);
        }
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.restoreEnumerator(context, enumeratorPart)) {
            Attempt second = new Attempt(source, readerPart);
            enumerator.addReader(0);
            second.start(enumerator);
            second.readAll();
            second.deliverTo(enumerator);
            assertThat(assigned(context, 0)).as("handed out again").isEmpty();
            assertThat(context.hasNoMoreSplits(0)).isTrue();
            read.addAll(second.read);
        }
        assertThat(read).containsExactly(0L, 1L, 2L, 3L, 4L);
    }

    /**
     * A reader that read its share to its end keeps a marker of it in its state, so a checkpoint
     * taken before the enumerator heard of it does not hand the share out again; and a reader whose
     * task had finished, which restores nothing, gets nothing, since the enumerator's checkpoint
     * has the share as read to its end.
     */
    @ParameterizedTest(name = "the reader's task had finished: {0}")
    @ValueSource(booleans = {false, true})
    void shouldNotHandOutAShareReadToItsEndAgain(boolean taskFinished) throws Exception {
        SampleSource.ShareSource source = source();
        List<NumberSequenceSplit> readerPart;
        Collection<NumberSequenceSplit> enumeratorPart;
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.createEnumerator(context)) {
            Attempt first = new Attempt(source, List.of());
            first.start(enumerator);
            first.reader.addSplits(lastAssigned(context, 0));
            first.readAll();
            readerPart = first.reader.snapshotState(1);
            if (taskFinished) {
                first.deliverTo(enumerator); // it asked, heard there is no more, and finished
                readerPart = List.of(); // a finished task's reader restores nothing
            }
            enumeratorPart = enumerator.snapshotState(1);
            assertThat(first.read).hasSize(5);
        }
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.restoreEnumerator(context, enumeratorPart)) {
            Attempt second = new Attempt(source, readerPart);
            enumerator.addReader(0);
            second.start(enumerator);
            second.readAll();
            assertThat(assigned(context, 0)).isEmpty();
            assertThat(context.hasNoMoreSplits(0)).isTrue();
            assertThat(second.read).isEmpty();
        }
    }

    /**
     * Flink restarts failed readers from the last completed checkpoint and keeps the enumerator as
     * it is. A share read to its end after that checkpoint (or with none completed) is read again
     * by the restarted reader; one read to its end before it, by a reader whose task had then
     * finished and restores nothing, is not.
     */
    @ParameterizedTest(name = "checkpoint completed after the share was read: {0}")
    @ValueSource(booleans = {false, true})
    void shouldHandARestartedReaderWhatItHadNotReadAtItsCheckpoint(boolean completedAfter)
            throws Exception {
        SampleSource.ShareSource source = source();
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator = source.createEnumerator(context)) {
            enumerator.addReader(0);
            Attempt first = new Attempt(source, List.of());
            first.start(enumerator);
            enumerator.snapshotState(1);
            enumerator.notifyCheckpointComplete(1); // before it has the share
            first.reader.addSplits(lastAssigned(context, 0));
            first.readAll();
            first.deliverTo(enumerator); // read to its end; asks for more
            assertThat(context.hasNoMoreSplits(0)).isTrue();
            if (completedAfter) {
                enumerator.snapshotState(2);
                enumerator.notifyCheckpointComplete(2);
            }
            int before = assigned(context, 0).size();

            // Restarted from the last completed checkpoint: a reader restores nothing either way
            // (it had nothing at checkpoint 1; its task had finished by checkpoint 2).
            Attempt second = new Attempt(source, List.of());
            enumerator.addReader(0);
            second.start(enumerator);
            if (completedAfter) {
                assertThat(assigned(context, 0)).hasSize(before);
            } else {
                assertThat(assigned(context, 0)).hasSize(before + 1);
                second.reader.addSplits(lastAssigned(context, 0));
                second.readAll();
                assertThat(second.read).containsExactly(0L, 1L, 2L, 3L, 4L);
            }
        }
    }

    /**
     * A checkpoint of the build before, which listed the shares not yet handed out: every other
     * share counts as read, unless its reader restored it.
     */
    @Test
    void shouldRestoreACheckpointThatListsTheSharesNotHandedOut() throws Exception {
        SampleSource.ShareSource source = source();
        try (MockSplitEnumeratorContext<NumberSequenceSplit> context =
                        new MockSplitEnumeratorContext<>(2);
                var enumerator =
                        source.restoreEnumerator(
                                context, List.of(new NumberSequenceSplit("1", 5, 9)))) {
            enumerator.handleSplitRequest(0, "host");
            enumerator.handleSplitRequest(1, "host");
            assertThat(context.hasNoMoreSplits(0)).isTrue();
            assertThat(assigned(context, 1)).containsExactly("1");
        }
    }

    private static SampleSource.ShareSource source() {
        return new SampleSource.ShareSource(new SampleSource.Shares(10, 2));
    }

    private static List<NumberSequenceSplit> lastAssigned(
            MockSplitEnumeratorContext<NumberSequenceSplit> context, int reader) {
        var sequence = context.getSplitsAssignmentSequence();
        return sequence.get(sequence.size() - 1).assignment().get(reader);
    }

    /** One attempt of reader 0: restored from {@code state}, with what it read and sent. */
    private static final class Attempt {
        final ReaderContext context = new ReaderContext(0);
        final SourceReader<Long, NumberSequenceSplit> reader;
        final List<Long> read = new ArrayList<>();

        Attempt(SampleSource.ShareSource source, List<NumberSequenceSplit> state) {
            reader = source.createReader(context);
            if (!state.isEmpty()) {
                reader.addSplits(state); // as Flink does, before it starts the reader
            }
        }

        /** Starts the reader, and hands the enumerator what it sent: its report, its request. */
        void start(
                org.apache.flink.api.connector.source.SplitEnumerator<NumberSequenceSplit, ?>
                        enumerator) {
            reader.start();
            deliverTo(enumerator);
        }

        void read(int n) throws Exception {
            poll(reader, n, read);
        }

        void readAll() throws Exception {
            poll(reader, Integer.MAX_VALUE, read);
        }

        void deliverTo(
                org.apache.flink.api.connector.source.SplitEnumerator<NumberSequenceSplit, ?>
                        enumerator) {
            deliver(context, enumerator);
        }
    }

    /** Hands the enumerator what the reader sent: its words and its requests, in order. */
    private static void deliver(
            ReaderContext reader,
            org.apache.flink.api.connector.source.SplitEnumerator<NumberSequenceSplit, ?>
                    enumerator) {
        for (Object sent : reader.sent) {
            if (sent instanceof SourceEvent event) {
                enumerator.handleSourceEvent(reader.subtask, event);
            } else {
                enumerator.handleSplitRequest(reader.subtask, "host");
            }
        }
        reader.sent.clear();
    }

    /** Reads up to {@code max} numbers, or until the reader has none now. */
    private static void poll(
            SourceReader<Long, NumberSequenceSplit> reader, int max, List<Long> into)
            throws Exception {
        List<Long> out = new ArrayList<>();
        ReaderOutput<Long> output = new Collecting(out);
        for (int i = 0; i < max; i++) {
            InputStatus status = reader.pollNext(output);
            if (status != InputStatus.MORE_AVAILABLE) {
                break;
            }
        }
        into.addAll(out);
    }

    /** A reader's context that records what the reader sends, for {@link #deliver}. */
    private static final class ReaderContext implements SourceReaderContext {
        private static final Object REQUEST = new Object();
        final int subtask;
        final List<Object> sent = new ArrayList<>();

        ReaderContext(int subtask) {
            this.subtask = subtask;
        }

        @Override
        public SourceReaderMetricGroup metricGroup() {
            return UnregisteredMetricsGroup.createSourceReaderMetricGroup();
        }

        @Override
        public Configuration getConfiguration() {
            return new Configuration();
        }

        @Override
        public String getLocalHostName() {
            return "host";
        }

        @Override
        public int getIndexOfSubtask() {
            return subtask;
        }

        @Override
        public void sendSplitRequest() {
            sent.add(REQUEST);
        }

        @Override
        public void sendSourceEventToCoordinator(SourceEvent event) {
            sent.add(event);
        }

        @Override
        public UserCodeClassLoader getUserCodeClassLoader() {
            return SimpleUserCodeClassLoader.create(getClass().getClassLoader());
        }

        @Override
        public int currentParallelism() {
            return 2;
        }
    }

    /** Collects what a reader emits. */
    private record Collecting(List<Long> out) implements ReaderOutput<Long> {
        @Override
        public void collect(Long record) {
            out.add(record);
        }

        @Override
        public void collect(Long record, long timestamp) {
            out.add(record);
        }

        @Override
        public void emitWatermark(Watermark watermark) {}

        @Override
        public void markIdle() {}

        @Override
        public void markActive() {}

        @Override
        public SourceOutput<Long> createOutputForSplit(String splitId) {
            return this;
        }

        @Override
        public void releaseOutputForSplit(String splitId) {}
    }

    private static List<String> assigned(
            MockSplitEnumeratorContext<NumberSequenceSplit> context, int reader) {
        List<String> ids = new ArrayList<>();
        for (var assignment : context.getSplitsAssignmentSequence()) {
            for (NumberSequenceSplit split :
                    assignment.assignment().getOrDefault(reader, List.of())) {
                ids.add(split.splitId());
            }
        }
        return ids;
    }

    @Test
    void shouldRefuseNoCasesNoEpochsOrNoShares() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1);
        assertThatThrownBy(() -> SampleSource.tasks(env, 0, 1, 1, 1))
                .hasMessageContaining("at least one case and one epoch");
        assertThatThrownBy(() -> SampleSource.tasks(env, 1, 0, 1, 1))
                .hasMessageContaining("at least one case and one epoch");
        assertThatThrownBy(() -> SampleSource.tasks(env, 1, 1, 1, 0))
                .hasMessageContaining("at least one share");
    }
}
