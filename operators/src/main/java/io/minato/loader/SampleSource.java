package io.minato.loader;

import io.minato.data.EpochOrder;
import io.minato.sample.SampleTask;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The training stream: E epochs over N cases, each epoch in its own shuffled order from (seed,
 * epoch), as small {@link SampleTask}s. It is a FLIP-27 number-sequence source (its split position
 * is the loader's checkpointed position) mapped to tasks, at parallelism 1 so the order holds.
 */
public final class SampleSource {
    /** Accumulator: wall-clock millis when the first sample was requested (the report's t0). */
    public static final String FIRST_REQUEST_MILLIS = "firstRequestMillis";

    private SampleSource() {}

    public static DataStream<SampleTask> tasks(
            StreamExecutionEnvironment env, int cases, int epochs, long seed) {
        if (cases < 1 || epochs < 1) {
            throw new IllegalArgumentException(
                    "need at least one case and one epoch: " + cases + ", " + epochs);
        }
        long total = (long) cases * epochs;
        return env.fromSource(
                        new NumberSequenceSource(0, total - 1),
                        WatermarkStrategy.noWatermarks(),
                        "SampleSource")
                .uid("sample-source")
                .setParallelism(1)
                .map(new ToTask(cases, seed))
                .name("SampleTask")
                .uid("sample-task")
                .setParallelism(1);
    }

    /** Global sample number -> (epoch, index in epoch, case by the epoch's permutation). */
    static final class ToTask extends RichMapFunction<Long, SampleTask> {
        private static final long serialVersionUID = 1L;
        private final int cases;
        private final long seed;
        private transient int cachedEpoch;
        private transient int[] order;
        private transient LongMinimum firstRequest;

        ToTask(int cases, long seed) {
            this.cases = cases;
            this.seed = seed;
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
        public SampleTask map(Long n) {
            if (n == 0 || firstRequest.getLocalValue() == Long.MAX_VALUE) {
                firstRequest.add(System.currentTimeMillis());
            }
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
