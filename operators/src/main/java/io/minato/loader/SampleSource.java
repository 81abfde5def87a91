package io.minato.loader;

import io.minato.data.EpochOrder;
import io.minato.sample.SampleTask;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.watermark.Watermark;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.lib.util.IteratorSourceReader;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * The training stream: E epochs over N cases, each epoch in its own shuffled order from (seed,
 * epoch), as small {@link SampleTask}s, in {@code shares} interleaved shares: share j holds samples
 * j, j + shares, j + 2 shares, ... (what a round-robin deal to that many workers gives each).
 *
 * <p>Each share is one split of a FLIP-27 number-sequence source, whose position is the loader's
 * checkpointed position, at the parallelism of the workers that consume it, so that a worker is
 * chained to its share: a task is handed over by a method call when the worker is ready for it, and
 * none waits in a network buffer. Tasks are a few dozen bytes, so one buffer between a separate
 * source and its workers held thousands of them, all of them in-flight data a checkpoint stores and
 * a restore replays before the job can checkpoint again.
 */
public final class SampleSource {
    /** Accumulator: wall-clock millis when the first sample was requested (the report's t0). */
    public static final String FIRST_REQUEST_MILLIS = "firstRequestMillis";

    private SampleSource() {}

    /** The tasks in {@code shares} interleaved shares, at parallelism {@code shares}. */
    public static DataStream<SampleTask> tasks(
            StreamExecutionEnvironment env, int cases, int epochs, long seed, int shares) {
        if (cases < 1 || epochs < 1) {
            throw new IllegalArgumentException(
                    "need at least one case and one epoch: " + cases + ", " + epochs);
        }
        if (shares < 1) {
            throw new IllegalArgumentException("need at least one share: " + shares);
        }
        Shares layout = new Shares((long) cases * epochs, shares);
        return env.fromSource(
                        new ShareSource(layout), WatermarkStrategy.noWatermarks(), "SampleSource")
                .uid("sample-shares")
                .setParallelism(shares)
                .flatMap(new ToTask(cases, seed, layout))
                .name("SampleTask")
                .uid("sample-share-tasks")
                .setParallelism(shares);
    }

    /**
     * {@code total} samples in {@code count} interleaved shares of {@code length} positions each:
     * position p (0 <= p < count * length) is sample (p % length) * count + p / length, and none
     * where that is {@code total} or more (the last round may be short).
     */
    record Shares(long total, int count) implements java.io.Serializable {
        long length() {
            return (total + count - 1) / count;
        }

        /** The sample at position {@code p}; -1 if none. */
        long sampleAt(long p) {
            long n = (p % length()) * count + p / length();
            return n < total ? n : -1;
        }
    }

    /** One split per share: positions [j * length, (j + 1) * length). */
    static final class ShareSource extends NumberSequenceSource {
        private static final long serialVersionUID = 1L;
        private final Shares shares;

        ShareSource(Shares shares) {
            super(0, shares.count() * shares.length() - 1);
            this.shares = shares;
        }

        /** One split per share, in share order. */
        private List<NumberSequenceSplit> shares() {
            long length = shares.length();
            List<NumberSequenceSplit> splits = new ArrayList<>(shares.count());
            for (int j = 0; j < shares.count(); j++) {
                splits.add(
                        new NumberSequenceSplit(
                                Integer.toString(j), j * length, (j + 1) * length - 1));
            }
            return splits;
        }

        @Override
        public SourceReader<Long, NumberSequenceSplit> createReader(SourceReaderContext context) {
            return new ShareReader(context);
        }

        @Override
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>>
                createEnumerator(SplitEnumeratorContext<NumberSequenceSplit> context) {
            return new OwnShares(context, shares(), Set.of());
        }

        /**
         * The shares read to their end, from this build's checkpoints; from an earlier build's,
         * which held the shares not yet handed out, every other share.
         */
        @Override
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>>
                restoreEnumerator(
                        SplitEnumeratorContext<NumberSequenceSplit> context,
                        Collection<NumberSequenceSplit> checkpoint) {
            List<NumberSequenceSplit> all = shares();
            Set<String> listed = new HashSet<>();
            checkpoint.forEach(share -> listed.add(share.splitId()));
            Set<String> done = new HashSet<>();
            if (listed.remove(OwnShares.FORMAT)) {
                listed.forEach(id -> done.add(OwnShares.shareOf(id)));
            } else {
                all.forEach(share -> done.add(share.splitId()));
                done.removeAll(listed);
            }
            return new OwnShares(context, all, done);
        }
    }

    /**
     * Hands share j to reader j (modulo the readers) and to no other: Flink's own enumerator gives
     * any share to whichever reader asks first, so a reader that started early took a late one's
     * share too, and a worker in another TaskManager could then prepare nothing.
     *
     * <p>What a reader holds, it knows; this enumerator learns it from the reader ({@link
     * ShareReader}). Flink's own enumerator checkpoints the splits not yet handed out, and relies
     * on a handed-out split being in the reader's part of the same checkpoint. Flink 2.3 breaks
     * that at times: it confirms that the reader's task has the assignment in its mailbox before it
     * completes the enumerator's part, but an unaligned checkpoint's trigger is urgent mail, which
     * the task runs before the assignment. The checkpoint then has the share in neither part, and a
     * restore from it read nothing of the share (LoaderJobTest: a run trained none of its samples
     * after its restore, 4 of 960 runs of that test alone). So each reader, when it starts, reports
     * the shares its restored state holds (being read, or read to their end), and says when it has
     * read one to its end; this enumerator checkpoints the shares read to their end, for readers
     * whose tasks had finished and so restore nothing; it keeps them by checkpoint too, since Flink
     * restarts failed readers from the last completed checkpoint and keeps the enumerator as it is.
     * A share of a reader that is neither held by it nor read to its end (as of the checkpoint the
     * reader restarted from) is handed to it (again) when it asks.
     */
    static final class OwnShares
            implements SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> {
        /** Marks a checkpoint of the shares read to their end (else: of those not handed out). */
        static final String FORMAT = "read-to-end";

        private static final String DONE = "done:";

        private final SplitEnumeratorContext<NumberSequenceSplit> context;
        private final List<NumberSequenceSplit> all;
        private final Set<String> done; // read to their end
        private final Set<String> out = new HashSet<>(); // handed out in its reader's attempt
        // The shares read to their end in each checkpoint taken, and in the last one completed:
        // what a reader restarted from that checkpoint had read (Flink restarts the readers
        // alone, from the last completed checkpoint, and keeps this enumerator as it is).
        private final TreeMap<Long, Set<String>> doneAt = new TreeMap<>();
        private Set<String> committed;

        OwnShares(
                SplitEnumeratorContext<NumberSequenceSplit> context,
                List<NumberSequenceSplit> all,
                Set<String> done) {
            this.context = context;
            this.all = all;
            this.done = new HashSet<>(done);
            this.committed = Set.copyOf(done);
        }

        /** The checkpoint entry of a share read to its end. */
        static NumberSequenceSplit readToEnd(String share) {
            return new NumberSequenceSplit(DONE + share, 0, 0);
        }

        /** The share of a checkpoint entry, or of a reader's own marker. */
        static String shareOf(String id) {
            return id.startsWith(DONE) ? id.substring(DONE.length()) : id;
        }

        static boolean isReadToEnd(NumberSequenceSplit split) {
            return split.splitId().startsWith(DONE);
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int reader, String host) {
            for (NumberSequenceSplit share : all) {
                String id = share.splitId();
                if (owner(id) == reader && !done.contains(id) && out.add(id)) {
                    context.assignSplit(share, reader);
                    return;
                }
            }
            context.signalNoMoreSplits(reader);
        }

        @Override
        public void handleSourceEvent(int reader, SourceEvent event) {
            if (event instanceof Restored restored) {
                // A new attempt of the reader (addReader forgot what the one before it was handed
                // out): it holds what it restored.
                done.removeAll(restored.reading());
                out.addAll(restored.reading());
                done.addAll(restored.readToEnd());
            } else if (event instanceof ReadToEnd ended) {
                done.addAll(ended.shares());
            }
        }

        /** Shares handed out since the reader's restored checkpoint: its report settles them. */
        @Override
        public void addSplitsBack(List<NumberSequenceSplit> shares, int reader) {
            shares.forEach(share -> out.remove(share.splitId()));
        }

        /**
         * A reader (again) registered: restarted from the last completed checkpoint, it has read to
         * their end the shares it had then, and holds nothing handed out to the attempt before it.
         */
        @Override
        public void addReader(int reader) {
            out.removeIf(id -> owner(id) == reader);
            done.removeIf(id -> owner(id) == reader && !committed.contains(id));
            committed.stream().filter(id -> owner(id) == reader).forEach(done::add);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            Set<String> then = doneAt.get(checkpointId);
            if (then != null) {
                committed = then;
                doneAt.headMap(checkpointId, true).clear();
            }
        }

        @Override
        public void notifyCheckpointAborted(long checkpointId) {
            doneAt.remove(checkpointId);
        }

        @Override
        public Collection<NumberSequenceSplit> snapshotState(long checkpointId) {
            doneAt.put(checkpointId, Set.copyOf(done));
            List<NumberSequenceSplit> checkpoint = new ArrayList<>(done.size() + 1);
            checkpoint.add(new NumberSequenceSplit(FORMAT, 0, 0));
            new TreeSet<>(done).forEach(id -> checkpoint.add(readToEnd(id)));
            return checkpoint;
        }

        @Override
        public void close() {}

        private int owner(String share) {
            return Integer.parseInt(share) % context.currentParallelism();
        }
    }

    /** A starting reader's report: the shares its restored state holds. */
    record Restored(List<String> reading, List<String> readToEnd) implements SourceEvent {}

    /** A reader has read these shares to their end. */
    record ReadToEnd(List<String> shares) implements SourceEvent {}

    /**
     * Flink's reader of number sequences, which keeps in its state the shares it has read to their
     * end (a marker each, which it does not read), reports what it restored when it starts, and
     * says when it has read a share to its end, before it asks for another ({@link OwnShares}).
     */
    static final class ShareReader implements SourceReader<Long, NumberSequenceSplit> {
        private final SourceReaderContext context;
        private final SourceReader<Long, NumberSequenceSplit> numbers;
        private final Set<String> reading = new TreeSet<>(); // given to numbers, not read to end
        private final Set<String> readToEnd = new TreeSet<>();

        ShareReader(SourceReaderContext context) {
            this.context = context;
            this.numbers = new IteratorSourceReader<>(new AskingAfterTheEnd());
        }

        @Override
        public void start() {
            context.sendSourceEventToCoordinator(
                    new Restored(List.copyOf(reading), List.copyOf(readToEnd)));
            numbers.start();
        }

        /** Before it starts, Flink adds the restored shares; afterwards, the ones handed out. */
        @Override
        public void addSplits(List<NumberSequenceSplit> shares) {
            List<NumberSequenceSplit> toRead = new ArrayList<>(shares.size());
            for (NumberSequenceSplit share : shares) {
                if (OwnShares.isReadToEnd(share)) {
                    readToEnd.add(OwnShares.shareOf(share.splitId()));
                } else {
                    reading.add(share.splitId());
                    toRead.add(share);
                }
            }
            numbers.addSplits(toRead);
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Long> output) throws Exception {
            return numbers.pollNext(output);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return numbers.isAvailable();
        }

        @Override
        public void notifyNoMoreSplits() {
            numbers.notifyNoMoreSplits();
        }

        /** The shares being read, where they are, then a marker for each read to its end. */
        @Override
        public List<NumberSequenceSplit> snapshotState(long checkpointId) {
            List<NumberSequenceSplit> state = new ArrayList<>(numbers.snapshotState(checkpointId));
            Set<String> ended = new TreeSet<>(readToEnd);
            ended.addAll(reading);
            state.forEach(share -> ended.remove(share.splitId()));
            ended.forEach(id -> state.add(OwnShares.readToEnd(id)));
            return state;
        }

        @Override
        public void close() throws Exception {
            numbers.close();
        }

        /**
         * The context Flink's reader gets, passing every call on: it asks for a split only once it
         * has read every one it was given, so the shares being read are then read to their end,
         * which the enumerator hears first.
         */
        private final class AskingAfterTheEnd implements SourceReaderContext {
            @Override
            public void sendSplitRequest() {
                if (!reading.isEmpty()) {
                    context.sendSourceEventToCoordinator(new ReadToEnd(List.copyOf(reading)));
                    readToEnd.addAll(reading);
                    reading.clear();
                }
                context.sendSplitRequest();
            }

            @Override
            public SourceReaderMetricGroup metricGroup() {
                return context.metricGroup();
            }

            @Override
            public Configuration getConfiguration() {
                return context.getConfiguration();
            }

            @Override
            public String getLocalHostName() {
                return context.getLocalHostName();
            }

            @Override
            public int getIndexOfSubtask() {
                return context.getIndexOfSubtask();
            }

            @Override
            public void sendSourceEventToCoordinator(SourceEvent event) {
                context.sendSourceEventToCoordinator(event);
            }

            @Override
            public UserCodeClassLoader getUserCodeClassLoader() {
                return context.getUserCodeClassLoader();
            }

            @Override
            public int currentParallelism() {
                return context.currentParallelism();
            }

            @Override
            public void emitWatermark(Watermark watermark) {
                context.emitWatermark(watermark);
            }
        }
    }

    /** Position -> (epoch, index in epoch, case by the epoch's permutation). */
    static final class ToTask extends RichFlatMapFunction<Long, SampleTask> {
        private static final long serialVersionUID = 1L;
        private final int cases;
        private final long seed;
        private final Shares shares;
        private transient int cachedEpoch;
        private transient int[] order;
        private transient LongMinimum firstRequest;

        ToTask(int cases, long seed, Shares shares) {
            this.cases = cases;
            this.seed = seed;
            this.shares = shares;
        }

        @Override
        public void open(OpenContext openContext) {
            cachedEpoch = -1; // transient: the field initializer does not run after deserialization
            firstRequest = new LongMinimum();
            getRuntimeContext().addAccumulator(FIRST_REQUEST_MILLIS, firstRequest);
        }

        @Override
        public void close() {
            AccumulatorFiles.write(getRuntimeContext(), FIRST_REQUEST_MILLIS);
        }

        @Override
        public void flatMap(Long position, Collector<SampleTask> out) {
            long n = shares.sampleAt(position);
            if (n < 0) {
                return;
            }
            if (firstRequest.getLocalValue() == Long.MAX_VALUE) {
                firstRequest.add(System.currentTimeMillis());
            }
            out.collect(task(n));
        }

        SampleTask task(long n) {
            int epoch = (int) (n / cases);
            int index = (int) (n % cases);
            if (epoch != cachedEpoch) {
                order = EpochOrder.permutation(seed, epoch, cases);
                cachedEpoch = epoch;
            }
            return new SampleTask(seed, epoch, index, order[index]);
        }
    }
}
