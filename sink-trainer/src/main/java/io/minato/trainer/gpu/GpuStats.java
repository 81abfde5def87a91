package io.minato.trainer.gpu;

/**
 * What a {@link GpuSampler} read from one GPU: how many readings, the mean utilisation and the
 * memory high-water mark.
 *
 * @param samples readings taken, at least 1
 * @param utilizationMeanPercent mean utilisation of the readings that had one; NaN when NVML
 *     reported none (e.g. MIG instances)
 * @param memoryPeakBytes the most device memory in use in any reading, by all processes
 * @param memoryTotalBytes device memory in all, as the last reading gave it
 */
public record GpuStats(
        long samples, double utilizationMeanPercent, long memoryPeakBytes, long memoryTotalBytes) {

    public GpuStats {
        if (samples < 1) {
            throw new IllegalArgumentException("GPU statistics need at least 1 sample: " + samples);
        }
        if (!Double.isNaN(utilizationMeanPercent)
                && !(utilizationMeanPercent >= 0 && utilizationMeanPercent <= 100)) {
            throw new IllegalArgumentException(
                    "GPU utilisation must be 0 to 100 %: " + utilizationMeanPercent);
        }
        if (memoryPeakBytes < 0 || memoryTotalBytes < 0) {
            throw new IllegalArgumentException(
                    "GPU memory must be >= 0 bytes: peak "
                            + memoryPeakBytes
                            + ", total "
                            + memoryTotalBytes);
        }
    }
}
