package io.minato.loader;

import io.minato.spi.MemoStats;
import io.minato.spi.Workload;
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

    /** The accumulators {@link #register} adds (for a detached job's accumulator files). */
    public static final String[] NAMES = {HITS, MISSES, BYTES};

    private CacheMetrics() {}

    /** Registers the workload's memo counters on an operator's metric group and accumulators. */
    public static void register(RuntimeContext context, MetricGroup metrics, Workload<?> workload) {
        MemoStats counters = workload.memo();
        metrics.gauge(HITS, counters::hits);
        metrics.gauge(MISSES, counters::misses);
        metrics.gauge(BYTES, counters::bytes);
        context.addAccumulator(HITS, LiveAccumulator.sum(counters::hits));
        context.addAccumulator(MISSES, LiveAccumulator.sum(counters::misses));
        context.addAccumulator(BYTES, LiveAccumulator.max(counters::bytes));
    }
}
