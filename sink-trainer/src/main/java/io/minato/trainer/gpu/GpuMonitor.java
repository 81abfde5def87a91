package io.minato.trainer.gpu;

import java.util.Optional;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

/** Reads one GPU's utilisation and memory use through NVML when asked; absent without a GPU. */
public interface GpuMonitor extends AutoCloseable {

    /**
     * One reading.
     *
     * @param utilizationPercent percent of the last sample period (1/6 s to 1 s, by product) in
     *     which a kernel ran; -1 where NVML does not report it (e.g. MIG instances)
     * @param memoryUsedBytes device memory in use by all processes
     * @param memoryTotalBytes device memory in all
     */
    record Sample(int utilizationPercent, long memoryUsedBytes, long memoryTotalBytes) {}

    /** Gauge names, one source for the job's metrics and the report. */
    String UTILIZATION_GAUGE = "gpuUtilizationPercent";

    String MEMORY_USED_GAUGE = "gpuMemoryUsedBytes";

    /** The GPU this monitor reads, empty for the absent monitor. */
    Optional<Gpu> gpu();

    /** A reading now; empty when absent or when NVML fails to answer. */
    Optional<Sample> sample();

    /** Releases NVML; idempotent. */
    @Override
    void close();

    default boolean present() {
        return gpu().isPresent();
    }

    /**
     * Adds the two gauges to {@code group}; they read -1 when there is nothing to read, so a
     * dashboard shows "no GPU" rather than a missing series.
     */
    default void registerGauges(MetricGroup group) {
        group.gauge(
                UTILIZATION_GAUGE,
                (Gauge<Integer>) () -> sample().map(Sample::utilizationPercent).orElse(-1));
        group.gauge(
                MEMORY_USED_GAUGE,
                (Gauge<Long>) () -> sample().map(Sample::memoryUsedBytes).orElse(-1L));
    }

    /** The monitor for a machine or device without a GPU: no readings. */
    static GpuMonitor absent() {
        return Absent.INSTANCE;
    }

    /**
     * A monitor of NVML's GPU {@code index} if {@link GpuProbe} found it, else {@link #absent()}.
     */
    static GpuMonitor open(int index) {
        return open(index, GpuProbe.detect());
    }

    /** As {@link #open(int)}, against an already known list of GPUs. */
    static GpuMonitor open(int index, Gpus gpus) {
        Optional<Gpu> gpu = gpus.get(index);
        return gpu.isPresent() ? NvmlGpuMonitor.open(gpu.get()) : absent();
    }

    /** No GPU: nothing to read and nothing to release. */
    enum Absent implements GpuMonitor {
        INSTANCE;

        @Override
        public Optional<Gpu> gpu() {
            return Optional.empty();
        }

        @Override
        public Optional<Sample> sample() {
            return Optional.empty();
        }

        @Override
        public void close() {}
    }
}
