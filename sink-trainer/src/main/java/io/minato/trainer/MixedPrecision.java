package io.minato.trainer;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The arrays of a mixed-precision step ({@link Precision#FP16}): float32 master parameters and
 * their momentum, which the optimizer updates; a float16 copy of the masters, which the forward and
 * backward passes compute with; the {@link LossScaler}.
 *
 * <p>DJL 0.35 has no autocast, and its type conversion runs outside autograd, so the float16
 * parameters cannot be casts of the masters inside the graph. They are leaves of their own, views
 * of one flat float16 array that the blocks get through {@link #store()} instead of their float32
 * arrays: after each update one conversion writes the masters into it. The masters and the momentum
 * are flat too, so that the float16 gradient becomes one float32 vector in one concatenation and
 * the update is a few operations over all parameters at once, not a few per parameter. The model's
 * own float32 arrays are written from the masters only to save the model. Arrays that no gradient
 * trains (batch norm's running statistics) stay float32 and are the model's own.
 */
final class MixedPrecision {
    private final NDArray[] modelArrays; // DJL's float32 arrays of the trainable parameters
    private final NDArray masters; // all trainable parameters, float32, flat
    private final NDArray[] masterViews; // each parameter's part of masters, in its shape
    private final NDArray momentum; // the SGD momentum, float32, flat like masters
    private final NDArray[] momentumViews;
    private final NDArray halves; // masters in float16, flat
    private final NDArray[] computing; // what each parameter computes with: a leaf with gradient
    private final int[] keptFloat32; // the parameters that compute in float32 (see above)
    private final ParameterStore store;
    private final LossScaler scaler;
    private final NDArray float32One; // (1,)

    /**
     * @param block the model's block, initialised
     * @param trainable its trainable parameters, in the order of its parameter list
     * @param state where the arrays live: the model's device, open as long as this is
     */
    MixedPrecision(Block block, List<Parameter> trainable, NDManager state, int growthInterval) {
        int n = trainable.size();
        modelArrays = new NDArray[n];
        NDList flat = new NDList(n);
        for (int i = 0; i < n; i++) {
            modelArrays[i] = trainable.get(i).getArray();
            flat.add(modelArrays[i].reshape(-1));
        }
        masters = NDArrays.concat(flat);
        masters.attach(state);
        flat.close();
        long total = masters.size();
        momentum = state.zeros(new Shape(total), DataType.FLOAT32);
        halves = masters.toType(DataType.FLOAT16, true);
        masterViews = views(masters);
        momentumViews = views(momentum);
        computing = views(halves);
        Set<Parameter> float32 = Collections.newSetFromMap(new IdentityHashMap<>());
        besideRunningStatistics(block, float32);
        List<Integer> kept = new ArrayList<>();
        Map<Parameter, NDArray> byParameter = new IdentityHashMap<>();
        for (int i = 0; i < n; i++) {
            if (float32.contains(trainable.get(i))) {
                computing[i].close(); // its float16 slot stays unused
                computing[i] = masterViews[i].duplicate();
                kept.add(i);
            }
            computing[i].setRequiresGradient(true);
            byParameter.put(trainable.get(i), computing[i]);
        }
        keptFloat32 = kept.stream().mapToInt(Integer::intValue).toArray();
        store = new HalfStore(state, byParameter);
        scaler = new LossScaler(state, growthInterval);
        float32One = state.ones(new Shape(1), DataType.FLOAT32);
    }

    /** The trainable parameters of every block in {@code block} that keeps running statistics. */
    private static void besideRunningStatistics(Block block, Set<Parameter> into) {
        var own = block.getDirectParameters().values();
        if (own.stream().anyMatch(p -> !p.requiresGradient())) {
            own.stream().filter(Parameter::requiresGradient).forEach(into::add);
        }
        for (Block child : block.getChildren().values()) {
            besideRunningStatistics(child, into);
        }
    }

    /** Each parameter's part of {@code all}, a view in the parameter's shape. */
    private NDArray[] views(NDArray all) {
        NDArray[] views = new NDArray[modelArrays.length];
        long offset = 0;
        for (int i = 0; i < views.length; i++) {
            long length = modelArrays[i].size();
            try (NDArray part = all.get(new NDIndex("{}:{}", offset, offset + length))) {
                views[i] = part.reshape(modelArrays[i].getShape());
            }
            offset += length;
        }
        return views;
    }

    /** The float32 masters, one view per trainable parameter. */
    NDArray[] masterViews() {
        return masterViews;
    }

    /** The momentum, one view per trainable parameter. */
    NDArray[] momentumViews() {
        return momentumViews;
    }

    /** What the blocks take their parameters from: the copies that compute. */
    ParameterStore store() {
        return store;
    }

    /** The network's input in float16. */
    NDArray input(NDArray x) {
        return x.toType(DataType.FLOAT16, false);
    }

    /**
     * The network's output in float32 for the loss, as autocast computes softmax and the loss in
     * float32. DJL's type conversion runs outside autograd; a product with a float32 array of one
     * element promotes the output to float32 and carries the gradient back in float16.
     */
    NDList forLoss(NDList prediction) {
        NDList promoted = new NDList(prediction.size());
        for (NDArray p : prediction) {
            promoted.add(p.mul(float32One));
        }
        return promoted;
    }

    /** The gradient the backward pass of {@code loss} starts from: the loss scale. */
    NDArray lossGradient(NDArray loss, NDManager scope) {
        return scaler.seed(loss, scope);
    }

    /** The step's gradient: one flat float32 vector, the loss scale divided out. */
    NDArray gradient(NDManager scope) {
        NDList parts = new NDList(computing.length);
        for (NDArray c : computing) {
            NDArray g = c.getGradient();
            g.attach(scope);
            parts.add(g.reshape(-1));
        }
        NDArray all = NDArrays.concat(parts); // float32 where any part is
        all.attach(scope);
        return scaler.unscale(all, scope);
    }

    /** Zeroes the gradients for the next backward pass. */
    void zeroGradients() {
        for (NDArray c : computing) {
            JniUtils.zeroGrad((PtNDArray) c);
        }
    }

    /**
     * The update with {@code gradient} (one flat vector), or none where it overflowed; then the
     * next scale, and the float16 copies from the masters.
     */
    void update(DeviceSgd sgd, NDArray gradient, float learningRate, NDManager scope) {
        NDArray overflowed = scaler.overflowed(gradient, scope);
        sgd.apply(
                new NDArray[] {masters},
                new NDArray[] {gradient},
                new NDArray[] {momentum},
                learningRate,
                overflowed,
                scope);
        scaler.update(overflowed, scope);
        refresh();
    }

    /** Writes the masters into the copies that compute (after an update or a restore). */
    void refresh() {
        NoGrad.run(
                () -> {
                    halves.set(new NDIndex("..."), masters);
                    for (int i : keptFloat32) {
                        computing[i].set(new NDIndex("..."), masterViews[i]);
                    }
                });
    }

    /** Writes the masters into the model's own arrays, which it saves. */
    void writeModel() {
        NoGrad.run(
                () -> {
                    for (int i = 0; i < modelArrays.length; i++) {
                        modelArrays[i].set(new NDIndex("..."), masterViews[i]);
                    }
                });
    }

    LossScaler scaler() {
        return scaler;
    }

    /**
     * A parameter store over the float16 copies: what DJL's blocks ask for their parameters in a
     * step; the arrays without gradient (running statistics) are the model's own.
     */
    private static final class HalfStore extends ParameterStore {
        private final Map<Parameter, NDArray> halves;

        HalfStore(NDManager manager, Map<Parameter, NDArray> halves) {
            super(manager, false);
            this.halves = halves;
        }

        @Override
        public NDArray getValue(Parameter parameter, Device device, boolean training) {
            if (parameter == null) {
                return null;
            }
            NDArray half = halves.get(parameter);
            return half != null ? half : parameter.getArray();
        }
    }
}
