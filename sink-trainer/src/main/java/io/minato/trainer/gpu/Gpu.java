package io.minato.trainer.gpu;

/** One GPU as NVML numbers it: its index, product name and total memory in bytes. */
public record Gpu(int index, String name, long totalMemoryBytes) {

    /** For the report and log lines, e.g. {@code 0 NVIDIA H100 80GB HBM3 (79.6 GiB)}. */
    @Override
    public String toString() {
        return String.format(
                java.util.Locale.ROOT,
                "%d %s (%.1f GiB)",
                index,
                name,
                totalMemoryBytes / (1024.0 * 1024 * 1024));
    }
}
