package io.minato.trainer;

import java.util.function.Supplier;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

/**
 * One device trainer's Flink metrics: the counters {@code steps}, {@code samplesFast}, {@code
 * samplesSlow}, {@code samplesTrained} and {@code samplesPreparedAgain}, and the gauges {@code
 * busyMillis} and {@code waitMillis} ({@link DeviceQueue} has {@code queueDepth}). Counters start
 * from a restored state's.
 */
final class TrainerMetrics {
    private final Counter steps;
    private final Counter fast;
    private final Counter slow;
    private final Counter preparedAgain;
    private final Counter samples;

    /**
     * @param counters the device's counters now, read by the gauges
     */
    TrainerMetrics(
            MetricGroup metrics, DeviceCounters restored, Supplier<DeviceCounters> counters) {
        steps = metrics.counter("steps");
        fast = metrics.counter("samplesFast");
        slow = metrics.counter("samplesSlow");
        preparedAgain = metrics.counter("samplesPreparedAgain");
        steps.inc(restored.steps());
        fast.inc(restored.fast());
        slow.inc(restored.slow());
        samples = metrics.counter("samplesTrained");
        samples.inc(restored.fast() + restored.slow());
        metrics.gauge("busyMillis", (Gauge<Long>) () -> counters.get().busyNanos() / 1_000_000);
        metrics.gauge("waitMillis", (Gauge<Long>) () -> counters.get().waitNanos() / 1_000_000);
    }

    /** A step of {@code samples} samples took the counters from {@code before} to {@code after}. */
    void step(DeviceCounters before, DeviceCounters after, int samples) {
        steps.inc();
        fast.inc(after.fast() - before.fast());
        slow.inc(after.slow() - before.slow());
        this.samples.inc(samples);
    }

    /** {@code n} samples arrived without their patch and were prepared here again. */
    void preparedAgain(int n) {
        preparedAgain.inc(n);
    }

    long preparedAgain() {
        return preparedAgain.getCount();
    }
}
