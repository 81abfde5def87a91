package io.minato.trainer.gpu;

/**
 * Where one trainer replica runs: a GPU by index, or the CPU ({@code index} then numbers the
 * replica, as several CPU replicas share the one CPU).
 */
public record TrainingDevice(Kind kind, int index) {

    /** The kinds {@code --devices} accepts. */
    public enum Kind {
        CPU,
        GPU
    }

    public TrainingDevice {
        if (index < 0) {
            throw new IllegalArgumentException("device index must be >= 0, got " + index);
        }
    }

    public static TrainingDevice cpu(int replica) {
        return new TrainingDevice(Kind.CPU, replica);
    }

    public static TrainingDevice gpu(int index) {
        return new TrainingDevice(Kind.GPU, index);
    }

    public boolean isGpu() {
        return kind == Kind.GPU;
    }

    /** {@code cpu:0}, {@code gpu:1}: how logs and the report name the device. */
    @Override
    public String toString() {
        return (isGpu() ? "gpu:" : "cpu:") + index;
    }
}
