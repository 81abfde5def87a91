package io.minato.trainer.gpu;

import static org.bytedeco.cuda.global.nvml.NVML_SUCCESS;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetHandleByIndex_v2;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetMemoryInfo;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetUtilizationRates;
import static org.bytedeco.cuda.global.nvml.nvmlInit_v2;
import static org.bytedeco.cuda.global.nvml.nvmlShutdown;

import java.util.Optional;
import org.bytedeco.cuda.nvml.nvmlDevice_st;
import org.bytedeco.cuda.nvml.nvmlMemory_t;
import org.bytedeco.cuda.nvml.nvmlUtilization_t;

/**
 * A GPU monitor that keeps NVML initialised and reuses the structs NVML fills, for cheap samples.
 */
final class NvmlGpuMonitor implements GpuMonitor {
    private final Gpu gpu;
    private final nvmlDevice_st device;
    private final nvmlMemory_t memory = new nvmlMemory_t();
    private final nvmlUtilization_t utilization = new nvmlUtilization_t();
    private boolean closed;

    private NvmlGpuMonitor(Gpu gpu, nvmlDevice_st device) {
        this.gpu = gpu;
        this.device = device;
    }

    /** A monitor of {@code gpu}, or the absent one when NVML cannot be loaded or opened now. */
    static GpuMonitor open(Gpu gpu) {
        try {
            // NVML counts inits: this one is released by close(), independent of the probe's.
            if (nvmlInit_v2() != NVML_SUCCESS) {
                return GpuMonitor.absent();
            }
        } catch (LinkageError e) {
            return GpuMonitor.absent();
        }
        nvmlDevice_st device = new nvmlDevice_st();
        if (nvmlDeviceGetHandleByIndex_v2(gpu.index(), device) != NVML_SUCCESS) {
            nvmlShutdown();
            return GpuMonitor.absent();
        }
        return new NvmlGpuMonitor(gpu, device);
    }

    @Override
    public Optional<Gpu> gpu() {
        return Optional.of(gpu);
    }

    // Synchronized: gauges are read by the metric reporter thread while the trainer reads too.
    @Override
    public synchronized Optional<Sample> sample() {
        if (closed || nvmlDeviceGetMemoryInfo(device, memory) != NVML_SUCCESS) {
            return Optional.empty();
        }
        int percent =
                nvmlDeviceGetUtilizationRates(device, utilization) == NVML_SUCCESS
                        ? utilization.gpu()
                        : -1;
        return Optional.of(new Sample(percent, memory.used(), memory.total()));
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            memory.close();
            utilization.close();
            nvmlShutdown();
        }
    }
}
