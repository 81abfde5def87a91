package io.minato.loader;

import io.minato.sample.SampleHandoff;
import io.minato.spi.Workload;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;

/**
 * What the in-order baselines ({@link InOrderLoader}, {@link DjlLoader}) share whichever way they
 * prepare: the order of their batches and how long each was held back, the handoff that parks their
 * batches for the trainers in this TaskManager and the trainers' receivers, and what the report
 * reads of them (preparation times, the task's share of the TaskManager's CPU, the accumulators).
 * Made in the operator's open(), closed in its close().
 */
final class InOrderBaseline {
    final InOrderBatches order;
    final PrepTimes prepTimes;
    final Receivers trainers;
    private final TaskManagerUsage.Share usage;
    private final SampleHandoff.Reservation handoff;

    /**
     * For the subtask of {@code context}, preparing {@code workload} in batches of {@code
     * batchSize} for {@code devices} devices, the first of them numbered {@code firstBatch}.
     */
    InOrderBaseline(
            RuntimeContext context,
            MetricGroup metrics,
            Workload<?> workload,
            int batchSize,
            int devices,
            long firstBatch) {
        CacheMetrics.register(context, metrics, workload);
        prepTimes = PrepTimes.register(context, metrics);
        usage = TaskManagerUsage.open(context, metrics);
        order = new InOrderBatches(batchSize, firstBatch);
        // Batches cross to the trainers as identities: two per device may be parked at once.
        handoff = SampleHandoff.jvm().reserve(2 * batchSize * devices);
        trainers = Receivers.of(context, metrics, SampleHandoff.TRAINER, devices).counted(context);
    }

    /** Adds this task's usage, writes the accumulators, and lets go of the batches and handoff. */
    void close(RuntimeContext context) {
        usage.close(false, Double.NaN);
        AccumulatorFiles.write(
                context,
                Quarantine.with(
                        PrepTimes.with(
                                TaskManagerUsage.with(
                                        Receivers.withSentAsBytes(CacheMetrics.NAMES)))));
        order.close();
        handoff.close();
    }
}
