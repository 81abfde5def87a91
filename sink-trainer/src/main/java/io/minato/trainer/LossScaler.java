package io.minato.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;

/**
 * The dynamic loss scale of a mixed-precision step, as PyTorch's {@code GradScaler} keeps it (the
 * same defaults: 2^16 to start, halved at each overflow, doubled after 2000 steps in a row
 * without), on the device. The backward pass starts from the scale instead of 1, so that small
 * float16 gradients do not flush to zero; the float32 gradient is divided by it again. {@code
 * GradScaler} reads on the host whether a gradient overflowed, to skip the optimizer's step; here
 * the flag stays a device scalar that the update multiplies by ({@link DeviceSgd}), and the scale
 * changes with array operations: a step queues its work and reads nothing back.
 */
final class LossScaler {
    static final float INITIAL_SCALE = 65536f;
    static final int GROWTH_INTERVAL = 2000;

    private final NDArray scale; // (), float32
    private final NDArray goodSteps; // (), float32: steps without an overflow since it changed
    private final NDArray one;
    private final NDArray half;
    private final NDArray interval;

    /**
     * @param state where the scale lives: the parameters' device, open as long as this is
     * @param growthInterval steps in a row without an overflow after which the scale doubles
     */
    LossScaler(NDManager state, int growthInterval) {
        if (growthInterval < 1) {
            throw new IllegalArgumentException("growth interval must be >= 1: " + growthInterval);
        }
        scale = state.create(INITIAL_SCALE);
        goodSteps = state.create(0f);
        one = state.create(1f);
        half = state.create(0.5f);
        interval = state.create((float) growthInterval);
    }

    /** The gradient the backward pass of {@code loss} starts from: the scale, where 1 was. */
    NDArray seed(NDArray loss, NDManager scope) {
        NDArray seed = scale.broadcast(loss.getShape());
        seed.attach(scope);
        return seed;
    }

    /** {@code scaled} (a float16 gradient of the scaled loss) in float32, divided by the scale. */
    NDArray unscale(NDArray scaled, NDManager scope) {
        NDArray gradient = scaled.toType(DataType.FLOAT32, false);
        gradient.attach(scope);
        return gradient.divi(scale);
    }

    /** Whether {@code gradient} holds an infinity or a NaN: a boolean scalar on the device. */
    NDArray overflowed(NDArray gradient, NDManager scope) {
        NDArray sum = gradient.sum(); // any infinity or NaN makes the sum one
        NDArray infinite = sum.isInfinite();
        NDArray nan = sum.isNaN();
        NDArray overflowed = infinite.logicalOr(nan);
        for (NDArray a : new NDArray[] {sum, infinite, nan, overflowed}) {
            a.attach(scope);
        }
        return overflowed;
    }

    /** After the step whose gradient {@code overflowed} (or not): the next step's scale. */
    void update(NDArray overflowed, NDManager scope) {
        NoGrad.run(
                () -> {
                    try (NDManager temporaries = scope.newSubManager()) {
                        NDArray skipped = overflowed.toType(DataType.FLOAT32, false);
                        skipped.attach(temporaries);
                        NDArray kept = one.sub(skipped);
                        kept.attach(temporaries);
                        goodSteps.addi(one).muli(kept);
                        NDArray grown = goodSteps.gte(interval);
                        grown.attach(temporaries);
                        NDArray grow = grown.toType(DataType.FLOAT32, false);
                        grow.attach(temporaries);
                        // kept: 1 or 2 (grown); skipped: 1/2.
                        NDArray factor = one.add(grow).muli(kept).addi(skipped.mul(half));
                        factor.attach(temporaries);
                        scale.muli(factor);
                        NDArray notGrown = one.sub(grow);
                        notGrown.attach(temporaries);
                        goodSteps.muli(notGrown);
                    }
                });
    }

    /** The scale and the steps since it changed, read from the device (a checkpoint's cost). */
    float[] values() {
        return new float[] {scale.getFloat(), goodSteps.getFloat()};
    }

    /** Copies of the scale's state on the device, for a checkpoint written later. */
    NDArray[] copy(NDManager copies) {
        NDArray[] c = {scale.duplicate(), goodSteps.duplicate()};
        for (NDArray a : c) {
            a.attach(copies);
        }
        return c;
    }

    /** Restores {@link #values()} of a checkpoint. */
    void restore(float scaleValue, float steps) {
        if (!(scaleValue > 0) || Float.isInfinite(scaleValue) || !(steps >= 0)) {
            throw new IllegalStateException(
                    "the checkpoint's loss scale is " + scaleValue + " after " + steps + " steps");
        }
        NoGrad.run(
                () -> {
                    try (NDManager temporaries = scale.getManager().newSubManager()) {
                        scale.set(new NDIndex("..."), temporaries.create(scaleValue));
                        goodSteps.set(new NDIndex("..."), temporaries.create(steps));
                    }
                });
    }

    /** The current scale, read from the device (tests and reports, not steps). */
    float scale() {
        return scale.getFloat();
    }
}
