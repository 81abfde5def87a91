package io.minato.loader;

import io.minato.spi.MemoStats;
import io.minato.spi.Workload;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.api.common.accumulators.SimpleAccumulator;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;

/**
 * An operator's lookups of remembered results ({@link io.minato.spi.MemoStats}) as Flink metrics
 * (web UI, REST) and as accumulators (summed over subtasks into the job's result, for the report).
 */
public final class CacheMetrics {
    /** Lookups that found the case's result remembered. */
    public static final String HITS = "caseCacheHits";

    /** Lookups that did not, so the sample computed it (and remembered it). */
    public static final String MISSES = "caseCacheMisses";

    /**
     * Bytes held by this JVM's in-memory stores; as an accumulator, the largest any subtask saw
     * (every subtask of a JVM reads the same stores, so a sum would count them again).
     */
    public static final String BYTES = "caseCacheBytes";

    private CacheMetrics() {}

    /** Registers the workload's memo counters on an operator's metric group and accumulators. */
    public static void register(RuntimeContext context, MetricGroup metrics, Workload<?> workload) {
        MemoStats counters = workload.memo();
        metrics.gauge(HITS, counters::hits);
        metrics.gauge(MISSES, counters::misses);
        metrics.gauge(BYTES, counters::bytes);
        context.addAccumulator(HITS, new Live(counters::hits, false));
        context.addAccumulator(MISSES, new Live(counters::misses, false));
        context.addAccumulator(BYTES, new Live(counters::bytes, true));
    }

    /**
     * An accumulator that reads a live counter; merged copies hold plain sums, or the largest value
     * seen.
     */
    private static final class Live implements SimpleAccumulator<Long> {
        private static final long serialVersionUID = 1L;
        private transient LongSupplier source;
        private final boolean max;
        private final AtomicLong merged = new AtomicLong();

        Live(LongSupplier source, boolean max) {
            this.source = source;
            this.max = max;
        }

        @Override
        public void add(Long value) {
            if (max) {
                merged.accumulateAndGet(value, Math::max);
            } else {
                merged.addAndGet(value);
            }
        }

        @Override
        public Long getLocalValue() {
            long live = source == null ? 0 : source.getAsLong();
            return max ? Math.max(merged.get(), live) : merged.get() + live;
        }

        @Override
        public void resetLocal() {
            merged.set(0);
            source = null;
        }

        @Override
        public void merge(Accumulator<Long, Long> other) {
            add(other.getLocalValue());
        }

        /** Flink ships accumulators serialized: ship the current count, not the live source. */
        private Object writeReplace() {
            return clone();
        }

        @Override
        public Live clone() {
            Live copy = new Live(null, max);
            copy.merged.set(getLocalValue());
            return copy;
        }
    }
}
