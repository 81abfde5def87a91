package io.minato.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.jni.JniUtils;

/**
 * PyTorch's SGD with momentum (dampening 0, optional weight decay and Nesterov), applied in place
 * to arrays on whatever device they live: {@code g += wd * w; v = m * v + g; w -= lr * (nesterov ?
 * g + m * v : v)}.
 *
 * <p>Each product and sum is its own float operation, as in PyTorch's reference loop and in the
 * host loop this replaced, so the result does not depend on fused multiply-adds. The constants are
 * device scalars made once; the learning rate, which the schedule changes, is one per step. No
 * value goes to the host.
 */
final class DeviceSgd {
    private final NDArray momentum;
    private final NDArray weightDecay; // null: none
    private final boolean nesterov;

    /**
     * @param manager where the constants live: the parameters' device, open as long as this is
     */
    DeviceSgd(NDManager manager, float momentum, float weightDecay, boolean nesterov) {
        this.momentum = manager.create(momentum);
        this.weightDecay = weightDecay == 0f ? null : manager.create(weightDecay);
        this.nesterov = nesterov;
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
        boolean gradMode = JniUtils.isGradMode();
        JniUtils.setGradMode(false); // in-place writes to parameters are not part of any graph
        try {
            NDArray lr = scope.create(learningRate);
            for (int i = 0; i < weights.length; i++) {
                NDArray w = weights[i];
                NDArray g = gradients[i];
                NDArray v = velocity[i];
                if (weightDecay != null) {
                    g.addi(temporary(w.mul(weightDecay), scope));
                }
                v.muli(momentum).addi(g);
                NDArray direction = nesterov ? g.addi(temporary(v.mul(momentum), scope)) : v;
                w.subi(temporary(direction.mul(lr), scope));
            }
        } finally {
            JniUtils.setGradMode(gradMode);
        }
    }

    /** A result array, freed with the step's scope rather than with its operand's owner. */
    private static NDArray temporary(NDArray array, NDManager scope) {
        array.attach(scope);
        return array;
    }
}
