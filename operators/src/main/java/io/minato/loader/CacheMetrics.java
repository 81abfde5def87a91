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

    /** Bytes held by this JVM's in-memory store. */
    public static final String BYTES = "caseCacheBytes";

    private CacheMetrics() {}

    /** Registers the workload's memo counters on an operator's metric group and accumulators. */
    public static void register(RuntimeContext context, MetricGroup metrics, Workload<?> workload) {
        MemoStats counters = workload.samples().memo();
        metrics.gauge(HITS, counters::hits);
        metrics.gauge(MISSES, counters::misses);
        metrics.gauge(BYTES, counters::bytes);
        context.addAccumulator(HITS, new Live(counters::hits));
        context.addAccumulator(MISSES, new Live(counters::misses));
    }

    /** An accumulator that reads a live counter; merged copies hold plain sums. */
    private static final class Live implements SimpleAccumulator<Long> {
        private static final long serialVersionUID = 1L;
        private transient LongSupplier source;
        private final AtomicLong merged = new AtomicLong();

        Live(LongSupplier source) {
            this.source = source;
        }

        @Override
        public void add(Long value) {
            merged.addAndGet(value);
        }

        @Override
        public Long getLocalValue() {
            return merged.get() + (source == null ? 0 : source.getAsLong());
        }

        @Override
        public void resetLocal() {
            merged.set(0);
            source = null;
        }

        @Override
        public void merge(Accumulator<Long, Long> other) {
            merged.addAndGet(other.getLocalValue());
        }

        /** Flink ships accumulators serialized: ship the current count, not the live source. */
        private Object writeReplace() {
            return clone();
        }

        @Override
        public Live clone() {
            Live copy = new Live(null);
            copy.merged.set(getLocalValue());
            return copy;
        }
    }
}
