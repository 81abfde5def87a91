package io.minato.loader.baseline;

import io.minato.loader.AccumulatorFiles;
import io.minato.loader.CacheMetrics;
import io.minato.loader.FailureMail;
import io.minato.loader.PrepTimes;
import io.minato.loader.Quarantine;
import io.minato.loader.Receivers;
import io.minato.loader.TaskManagerUsage;
import io.minato.sample.SampleHandoff;
import io.minato.spi.Workload;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;

/**
 * What the in-order baselines ({@link InOrderLoader}, {@link DjlLoader}) share whichever way they
 * prepare: the order of their batches and how long each was held back, the handoff that parks their
 * batches for the trainers in this TaskManager and the trainers' receivers, the mail that brings a
 * worker's failure to the task thread, and what the report reads of them (batches and dropped
 * samples, preparation times, the task's share of the TaskManager's CPU, the accumulators). Made in
 * the operator's open(), closed in its close().
 */
final class InOrderBaseline {
    final InOrderBatches order;
    final PrepTimes prepTimes;
    final Receivers trainers;
    final FailureMail failures;
    final Counter batches;
    final Counter samplesDropped;
    private final TaskManagerUsage.Share usage;
    private final SampleHandoff.Reservation handoff;

    /**
     * For the subtask of {@code context}, preparing {@code workload} in batches of {@code
     * batchSize} for {@code devices} devices, the first of them numbered {@code firstBatch}; its
     * workers' failures come to the task thread as {@code failures}.
     */
    InOrderBaseline(
            RuntimeContext context,
            MetricGroup metrics,
            Workload<?> workload,
            int batchSize,
            int devices,
            long firstBatch,
            FailureMail failures) {
        this.failures = failures;
        batches = metrics.counter("batches");
        samplesDropped = metrics.counter("samplesDropped");
        CacheMetrics.register(context, metrics, workload);
        prepTimes = PrepTimes.register(context, metrics);
        usage = TaskManagerUsage.open(context, metrics);
        order = new InOrderBatches(batchSize, firstBatch);
        // Batches cross to the trainers as identities: two per device may be parked at once.
        handoff = SampleHandoff.jvm().reserve(2 * batchSize * devices);
        trainers = Receivers.of(context, metrics, SampleHandoff.TRAINER, devices).counted(context);
    }

    /**
     * Takes a failure from now on for the closing's own, adds this task's usage, writes the
     * accumulators, and lets go of the batches and handoff.
     */
    void close(RuntimeContext context) {
        failures.close();
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
