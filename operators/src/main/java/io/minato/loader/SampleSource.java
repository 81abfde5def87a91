package io.minato.loader;

import io.minato.data.EpochOrder;
import io.minato.sample.SampleTask;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;

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
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>>
                createEnumerator(SplitEnumeratorContext<NumberSequenceSplit> context) {
            return new OwnShares(context, shares());
        }

        @Override
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>>
                restoreEnumerator(
                        SplitEnumeratorContext<NumberSequenceSplit> context,
                        Collection<NumberSequenceSplit> remaining) {
            return new OwnShares(context, remaining);
        }
    }

    /**
     * Hands share j to reader j (modulo the readers) and to no other: Flink's own enumerator gives
     * any share to whichever reader asks first, so a reader that started early took a late one's
     * share too, and a worker in another TaskManager could then prepare nothing. Its checkpoint is
     * the shares not yet handed out, as Flink's is.
     */
    static final class OwnShares
            implements SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> {
        private final SplitEnumeratorContext<NumberSequenceSplit> context;
        private final List<NumberSequenceSplit> remaining;

        OwnShares(
                SplitEnumeratorContext<NumberSequenceSplit> context,
                Collection<NumberSequenceSplit> remaining) {
            this.context = context;
            this.remaining = new ArrayList<>(remaining);
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int reader, String host) {
            int readers = context.currentParallelism();
            for (Iterator<NumberSequenceSplit> it = remaining.iterator(); it.hasNext(); ) {
                NumberSequenceSplit share = it.next();
                if (Integer.parseInt(share.splitId()) % readers == reader) {
                    it.remove();
                    context.assignSplit(share, reader);
                    return;
                }
            }
            context.signalNoMoreSplits(reader);
        }

        @Override
        public void addSplitsBack(List<NumberSequenceSplit> shares, int reader) {
            remaining.addAll(shares);
        }

        @Override
        public void addReader(int reader) {
            // Readers ask for their share themselves.
        }

        @Override
        public Collection<NumberSequenceSplit> snapshotState(long checkpointId) {
            return new ArrayList<>(remaining);
        }

        @Override
        public void close() {}
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
