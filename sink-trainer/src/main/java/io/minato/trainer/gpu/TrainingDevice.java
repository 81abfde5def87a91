package io.minato.trainer.gpu;

import java.io.Serializable;

/**
 * Where one trainer replica runs: a GPU of this host by index, the GPU Flink gives the trainer's
 * TaskManager, or the CPU ({@code index} then numbers the replica, as several CPU replicas share
 * the one CPU, and Flink's GPUs are numbered by trainer).
 */
public record TrainingDevice(Kind kind, int index) implements Serializable {

    /** Where a trainer runs. */
    public enum Kind {
        CPU,
        /** A GPU of the host by its index. */
        GPU,
        /**
         * The GPU Flink's external resource framework gives the trainer's TaskManager ({@link
         * FlinkGpus}): only that TaskManager knows which.
         */
        FLINK_GPU
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

    /** Trainer {@code replica}'s GPU, the one Flink gives its TaskManager. */
    public static TrainingDevice flinkGpu(int replica) {
        return new TrainingDevice(Kind.FLINK_GPU, replica);
    }

    public boolean isGpu() {
        return kind != Kind.CPU;
    }

    /** {@code cpu:0}, {@code gpu:1}: how logs and the report name the device. */
    @Override
    public String toString() {
        return (isGpu() ? "gpu:" : "cpu:") + index;
    }
}
