package io.minato.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * PyTorch's SGD with momentum (dampening 0, optional weight decay and Nesterov), applied in place
 * to arrays on whatever device they live: {@code g += wd * w; v = m * v + g; w -= lr * (nesterov ?
 * g + m * v : v)}.
 *
 * <p>Each product and sum is its own float operation, as in PyTorch's reference loop and in the
 * host loop this replaced, so the result does not depend on fused multiply-adds. The constants are
 * device scalars made once; the learning rate, which the schedule changes, is one per step, filled
 * on the device. No value goes to the host, and none comes from it.
 */
final class DeviceSgd {
    private final NDArray momentum;
    private final NDArray weightDecay; // null: none
    private final boolean nesterov;
    private final NDArray one;
    private final NDArray zero;

    /**
     * @param manager where the constants live: the parameters' device, open as long as this is
     */
    DeviceSgd(NDManager manager, float momentum, float weightDecay, boolean nesterov) {
        this.momentum = manager.create(momentum);
        this.weightDecay = weightDecay == 0f ? null : manager.create(weightDecay);
        this.nesterov = nesterov;
        this.one = manager.create(1f);
        this.zero = manager.create(0f);
    }

    /**
     * One step over every parameter. The gradients are overwritten; temporaries belong to {@code
     * scope}.
     */
    void apply(
            NDArray[] weights,
            NDArray[] gradients,
            NDArray[] velocity,
            float learningRate,
            NDManager scope) {
        apply(weights, gradients, velocity, learningRate, null, scope);
    }

    /**
     * One step over every parameter, or none where {@code overflowed} (a boolean scalar on the
     * device, or null) is true: a mixed-precision step whose gradient overflowed is skipped, as
     * PyTorch's {@code GradScaler} skips the optimizer's step, but without reading the flag on the
     * host. Its gradient becomes zero, and the rate, the weight decay and the momentum's decay are
     * multiplied away: the weights and the momentum stay as they were, bit for bit.
     */
    void apply(
            NDArray[] weights,
            NDArray[] gradients,
            NDArray[] velocity,
            float learningRate,
            NDArray overflowed,
            NDManager scope) {
        // In-place writes to parameters are not part of any graph.
        NoGrad.run(
                () -> {
                    // Filled on the device: a number copied from the host would wait for the
                    // queued step.
                    NDArray lr = scope.full(new Shape(), learningRate, DataType.FLOAT32);
                    NDArray m = momentum;
                    NDArray wd = weightDecay;
                    if (overflowed != null) {
                        NDArray skipped =
                                temporary(overflowed.toType(DataType.FLOAT32, false), scope);
                        NDArray kept = temporary(skipped.neg().addi(one), scope);
                        lr = temporary(lr.mul(kept), scope);
                        m = temporary(momentum.mul(kept).addi(skipped), scope); // 1 where skipped
                        wd = wd == null ? null : temporary(wd.mul(kept), scope);
                        for (int i = 0; i < gradients.length; i++) {
                            gradients[i] =
                                    temporary(
                                            NDArrays.where(overflowed, zero, gradients[i]), scope);
                        }
                    }
                    for (int i = 0; i < weights.length; i++) {
                        NDArray w = weights[i];
                        NDArray g = gradients[i];
                        NDArray v = velocity[i];
                        if (wd != null) {
                            g.addi(temporary(w.mul(wd), scope));
                        }
                        v.muli(m).addi(g);
                        NDArray direction = nesterov ? g.addi(temporary(v.mul(m), scope)) : v;
                        w.subi(temporary(direction.mul(lr), scope));
                    }
                });
    }

    /** A result array, freed with the step's scope rather than with its operand's owner. */
    private static NDArray temporary(NDArray array, NDManager scope) {
        array.attach(scope);
        return array;
    }
}
