package io.minato.trainer.gpu;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a {@link GpuMonitor} periodically on a daemon thread and keeps what it saw since it
 * started, as {@link GpuStats}. An absent monitor gets no thread and no statistics.
 *
 * <p>The sampler owns the monitor: {@link #close()} stops sampling and closes it.
 */
public final class GpuSampler implements AutoCloseable {

    /** How often the trainer sink reads its GPU. */
    public static final Duration DEFAULT_PERIOD = Duration.ofMillis(500);

    private static final Logger LOG = LoggerFactory.getLogger(GpuSampler.class);
    private static final long CLOSE_WAIT_MILLIS = 5_000;

    private final GpuMonitor monitor;
    private final ScheduledExecutorService executor; // null: not sampling on a thread

    // Guarded by this.
    private long samples;
    private long utilizationSamples;
    private double utilizationSum;
    private long memoryPeak;
    private long memoryTotal;
    private boolean warned;

    private volatile GpuStats stats; // null: no reading yet

    /** A sampler that reads only when {@link #sampleNow()} is called: for tests. */
    GpuSampler(GpuMonitor monitor) {
        this(monitor, null);
    }

    private GpuSampler(GpuMonitor monitor, ScheduledExecutorService executor) {
        this.monitor = monitor;
        this.executor = executor;
    }

    /**
     * If {@code monitor} is {@link GpuMonitor#present() present}, takes a reading now, so that even
     * a short run has one, then every {@code period} on a daemon thread named {@code threadName};
     * else starts nothing.
     */
    public static GpuSampler start(GpuMonitor monitor, String threadName, Duration period) {
        if (period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("GPU sampling period must be > 0: " + period);
        }
        if (!monitor.present()) {
            return new GpuSampler(monitor, null);
        }
        ScheduledExecutorService executor =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, threadName);
                            t.setDaemon(true);
                            return t;
                        });
        GpuSampler sampler = new GpuSampler(monitor, executor);
        sampler.sampleNow();
        executor.scheduleWithFixedDelay(
                sampler::sampleNow, period.toNanos(), period.toNanos(), TimeUnit.NANOSECONDS);
        return sampler;
    }

    /** The monitor this sampler reads, e.g. for its gauges. */
    public GpuMonitor monitor() {
        return monitor;
    }

    /** What was read so far; empty without a GPU or before the first answered reading. */
    public Optional<GpuStats> stats() {
        return Optional.ofNullable(stats);
    }

    /**
     * One reading, added to the statistics; a monitor that does not answer adds nothing. Never
     * throws, so that a failing read cannot stop the periodic sampling.
     */
    synchronized void sampleNow() {
        Optional<GpuMonitor.Sample> reading;
        try {
            reading = monitor.sample();
        } catch (RuntimeException e) {
            if (!warned) {
                warned = true;
                LOG.warn("GPU reading failed, skipped: {}", e.toString());
            }
            return;
        }
        if (reading.isEmpty()) {
            return;
        }
        GpuMonitor.Sample s = reading.get();
        samples++;
        if (s.utilizationPercent() >= 0) {
            utilizationSamples++;
            utilizationSum += s.utilizationPercent();
        }
        memoryPeak = Math.max(memoryPeak, s.memoryUsedBytes());
        memoryTotal = s.memoryTotalBytes();
        stats =
                new GpuStats(
                        samples,
                        utilizationSamples == 0 ? Double.NaN : utilizationSum / utilizationSamples,
                        memoryPeak,
                        memoryTotal);
    }

    /**
     * Stops sampling, waiting for a reading under way, then closes the monitor; idempotent, never
     * throws (a failure to release NVML is logged).
     */
    @Override
    public void close() {
        if (executor != null) {
            executor.shutdownNow();
            try {
                if (!executor.awaitTermination(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                    LOG.warn("GPU sampler did not stop within {} ms", CLOSE_WAIT_MILLIS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // closing goes on
            }
        }
        try {
            monitor.close();
        } catch (RuntimeException e) {
            LOG.warn("GPU monitor did not close: {}", e.toString());
        }
    }
}
