package io.minato.trainer;

import io.minato.trainer.gpu.TrainingDevice;
import java.util.List;
import java.util.Locale;

/**
 * The number format of a training step. {@link #FP16} is mixed precision as NVIDIA's apex trained
 * it before autocast: the forward and backward passes in float16, from float16 copies of float32
 * master parameters, which the optimizer updates; the loss in float32; the gradients scaled by a
 * dynamic loss scale, as PyTorch's {@code GradScaler} does ({@link LossScaler}). {@link #AUTO} is
 * float16 on GPUs and float32 on the CPU, which has no fast float16 kernels (libtorch's float16
 * convolution on the CPU runs about 70x slower than its float32 one).
 */
public enum Precision {
    AUTO,
    FP32,
    FP16;

    /** The precision a run trains in on these devices: AUTO is FP16 where all are GPUs. */
    public Precision forDevices(List<TrainingDevice> devices) {
        return forDevice(!devices.isEmpty() && devices.stream().allMatch(TrainingDevice::isGpu));
    }

    /** The precision one trainer trains in on a GPU or the CPU. */
    public Precision forDevice(boolean gpu) {
        return this != AUTO ? this : gpu ? FP16 : FP32;
    }

    /** The name on the command line and in reports: auto, fp32, fp16. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The precision {@code label} names, or a one-line error that lists the names. */
    public static Precision parse(String label) {
        for (Precision p : values()) {
            if (p.label().equals(label)) {
                return p;
            }
        }
        throw new IllegalArgumentException(
                "unknown precision '" + label + "': expected auto, fp32 or fp16");
    }
}
