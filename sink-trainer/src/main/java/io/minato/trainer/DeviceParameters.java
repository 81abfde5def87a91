package io.minato.trainer;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.nn.ParameterList;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.Trainer;
import io.minato.trainer.kits19.Unet3dNetwork;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;

/**
 * A model's arrays on its device as {@link DjlAccelerator} trains them: the trainable parameters
 * with their gradients and SGD momentum, and the arrays no gradient trains (batch norm's running
 * statistics). It flattens what replicas average into one host vector and takes the average back,
 * and writes and reads the training state of checkpoints. In {@link Precision#FP16} the trainable
 * parameters are float32 masters of a {@link MixedPrecision} step, whose gradient is one flat
 * vector; a checkpoint holds the masters as it holds the parameters in float32, and the loss scale
 * after them.
 */
final class DeviceParameters {
    private static final int STATE_MAGIC = 0x4D4E5332; // "MNS2": names its network

    /** The state before networks were named: the same layout without the name, a 3D-UNet's. */
    private static final int UNET_STATE_MAGIC = 0x4D4E5331; // "MNS1"

    /** Marks the loss scale that follows the arrays in a mixed-precision state. */
    private static final int LOSS_SCALE_TAG = 0x4C534331; // "LSC1"

    private final ParameterList named; // every array of the block, in its order
    private final boolean[] trainable; // per array of the block
    private final NDArray[] weights; // the trainable parameters' arrays (FP16: masters)
    private final NDArray[] velocity; // SGD momentum buffers, in trainable parameter order
    private final int[] lengths; // values per trainable parameter
    private final long gradientLength;
    private final Shape[] gradientShapes; // the arrays a step's gradient comes in
    private final MixedPrecision half; // null: float32
    private final NDArray[] buffers; // the arrays trained by no gradient, in order
    private final int[] bufferLengths;
    private final long bufferLength;

    /**
     * The initialised {@code model}'s arrays for steps in {@code precision} (FP32 or FP16);
     * momentum starts at zero in {@code state}, which lives on the model's device as long as this
     * does.
     */
    DeviceParameters(Model model, NDManager state, Precision precision) {
        named = model.getBlock().getParameters();
        List<Parameter> parameters = new ArrayList<>();
        List<Parameter> untrained = new ArrayList<>();
        trainable = new boolean[named.size()];
        for (int i = 0; i < trainable.length; i++) {
            Parameter p = named.get(i).getValue();
            // DJL's own flag: batch norm's running statistics say no, every weight yes.
            trainable[i] = p.requiresGradient();
            (trainable[i] ? parameters : untrained).add(p);
        }
        if (precision == Precision.FP16) {
            half =
                    new MixedPrecision(
                            model.getBlock(), parameters, state, LossScaler.GROWTH_INTERVAL);
            weights = half.masterViews();
            velocity = half.momentumViews();
        } else if (precision == Precision.FP32) {
            half = null;
            weights = new NDArray[parameters.size()];
            velocity = new NDArray[parameters.size()];
            for (int i = 0; i < weights.length; i++) {
                weights[i] = parameters.get(i).getArray();
                velocity[i] = state.zeros(weights[i].getShape(), DataType.FLOAT32);
            }
        } else {
            throw new IllegalArgumentException("a device trains in fp32 or fp16, not " + precision);
        }
        lengths = new int[parameters.size()];
        long total = 0;
        for (int i = 0; i < weights.length; i++) {
            lengths[i] = Math.toIntExact(weights[i].size());
            total += lengths[i];
        }
        gradientLength = total;
        if (half == null) {
            gradientShapes = new Shape[weights.length];
            for (int i = 0; i < weights.length; i++) {
                gradientShapes[i] = weights[i].getShape();
            }
        } else {
            gradientShapes = new Shape[] {new Shape(gradientLength)};
        }
        buffers = new NDArray[untrained.size()];
        bufferLengths = new int[untrained.size()];
        total = 0;
        for (int i = 0; i < buffers.length; i++) {
            buffers[i] = untrained.get(i).getArray();
            bufferLengths[i] = Math.toIntExact(buffers[i].size());
            total += bufferLengths[i];
        }
        bufferLength = total;
    }

    /**
     * The forward pass of a training step on {@code x}: DJL's trainer's, or in FP16 the model's
     * block over the float16 copies of the parameters, on {@code x} in float16.
     */
    NDList forward(Trainer trainer, NDArray x) {
        if (half == null) {
            return trainer.forward(new NDList(x));
        }
        return trainer.getModel().getBlock().forward(half.store(), new NDList(half.input(x)), true);
    }

    /** The network's output for the loss, in float32. */
    NDList forLoss(NDList prediction) {
        return half == null ? prediction : half.forLoss(prediction);
    }

    /** The gradient the backward pass of {@code loss} starts from: 1, or the loss scale. */
    NDArray lossGradient(NDArray loss, NDManager scope) {
        return half == null ? scope.ones(loss.getShape()) : half.lossGradient(loss, scope);
    }

    /**
     * The step's gradient, as arrays of {@code scope}: each parameter's (views of libtorch's
     * buffers), or in FP16 one flat float32 vector, unscaled.
     */
    NDArray[] gradients(NDManager scope) {
        if (half != null) {
            return new NDArray[] {half.gradient(scope)};
        }
        NDArray[] g = new NDArray[weights.length];
        for (int i = 0; i < g.length; i++) {
            g[i] = weights[i].getGradient();
            g[i].attach(scope);
        }
        return g;
    }

    /** Zeroes the gradients libtorch accumulates into, for the next backward pass. */
    void zeroGradients() {
        if (half != null) {
            half.zeroGradients();
            return;
        }
        for (NDArray w : weights) {
            JniUtils.zeroGrad((PtNDArray) w);
        }
    }

    /** One SGD step over every parameter with {@code gradients}, on the device. */
    void update(DeviceSgd sgd, NDArray[] gradients, float learningRate, NDManager scope) {
        if (half != null) {
            half.update(sgd, gradients[0], learningRate, scope);
        } else {
            sgd.apply(weights, gradients, velocity, learningRate, scope);
        }
    }

    /** Brings the model's own arrays up to date before it is saved (FP16: from the masters). */
    void writeModel() {
        if (half != null) {
            half.writeModel();
        }
    }

    /** The loss scale of a mixed-precision step; absent in float32. */
    OptionalDouble lossScale() {
        return half == null ? OptionalDouble.empty() : OptionalDouble.of(half.scaler().scale());
    }

    /**
     * The gradients, then the running statistics, as one host vector: gathered on the device, one
     * copy down.
     */
    float[] flatten(NDArray[] gradients, NDManager scope) {
        NDList flat = new NDList(gradients.length + buffers.length);
        for (NDArray g : gradients) {
            flat.add(g.reshape(-1));
        }
        for (NDArray b : buffers) {
            NDArray view = b.reshape(-1);
            view.attach(scope); // else it would belong to the model's manager, freed only at close
            flat.add(view);
        }
        NDArray all = NDArrays.concat(flat);
        all.attach(scope);
        return all.toFloatArray();
    }

    /**
     * The replicas' averaged vector back on the device in one copy: the running statistics' part
     * copied over this replica's own, the gradients' part returned for the update.
     */
    NDArray[] takeAverage(float[] average, NDManager scope) {
        if (average.length != gradientLength + bufferLength) {
            throw new IllegalStateException(
                    "averaged gradient of "
                            + average.length
                            + " values for a model of "
                            + (gradientLength + bufferLength));
        }
        NDArray all = scope.create(average);
        NDArray[] g = new NDArray[gradientShapes.length];
        long offset = 0;
        for (int i = 0; i < g.length; i++) {
            long length = gradientShapes[i].size();
            g[i] =
                    all.get(new NDIndex("{}:{}", offset, offset + length))
                            .reshape(gradientShapes[i]);
            offset += length;
        }
        for (int i = 0; i < buffers.length; i++) {
            NDArray mean =
                    all.get(new NDIndex("{}:{}", offset, offset + bufferLengths[i]))
                            .reshape(buffers[i].getShape());
            buffers[i].set(new NDIndex("..."), mean);
            offset += bufferLengths[i];
        }
        return g;
    }

    /**
     * Parameters and momentum, copied from the device: a checkpoint's cost, not a step's. Every
     * array of the block in its order, each with its name and length, its values and, where it is
     * trained, its momentum: a network without running statistics (the 3D-UNet) writes what it
     * always did.
     */
    byte[] encode(String modelName, long step) {
        return encode(
                modelName,
                step,
                weights,
                velocity,
                buffers,
                half == null ? null : half.scaler().values());
    }

    /**
     * Copies of every array made on the device, in {@code copies} (which the capture owns and
     * closes when it is closed): a copy queued behind the steps before it, which steps after it
     * leave alone. Its bytes are {@link #encode}'s at this point, written when asked, on whatever
     * thread asks.
     */
    Accelerator.Capture capture(String modelName, long step, NDManager copies) {
        NDArray[] w = copy(weights, copies);
        NDArray[] v = copy(velocity, copies);
        NDArray[] b = copy(buffers, copies);
        NDArray[] scale = half == null ? null : half.scaler().copy(copies);
        return new Accelerator.Capture() {
            @Override
            public byte[] bytes() {
                float[] lossScale =
                        scale == null
                                ? null
                                : new float[] {scale[0].getFloat(), scale[1].getFloat()};
                return encode(modelName, step, w, v, b, lossScale);
            }

            @Override
            public void close() {
                copies.close();
            }
        };
    }

    private static NDArray[] copy(NDArray[] arrays, NDManager copies) {
        NDArray[] c = new NDArray[arrays.length];
        for (int i = 0; i < c.length; i++) {
            c[i] = arrays[i].duplicate();
            c[i].attach(copies);
        }
        return c;
    }

    private byte[] encode(
            String modelName, long step, NDArray[] w, NDArray[] v, NDArray[] b, float[] lossScale) {
        try {
            // Sized to the byte, so that a large model's state is written into its final array.
            long size = 4 + utfLength(modelName) + 8 + 4;
            for (int i = 0; i < trainable.length; i++) {
                size += utfLength(named.get(i).getKey()) + 4;
            }
            size += (2 * gradientLength + bufferLength) * Float.BYTES;
            if (lossScale != null) {
                size += 4 + 2 * Float.BYTES;
            }
            Exact bytes = new Exact(Math.toIntExact(size));
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(STATE_MAGIC);
            out.writeUTF(modelName);
            out.writeLong(step);
            out.writeInt(trainable.length);
            for (int i = 0, wi = 0, bi = 0; i < trainable.length; i++) {
                out.writeUTF(named.get(i).getKey());
                if (trainable[i]) {
                    out.writeInt(lengths[wi]);
                    writeFloats(out, w[wi].toFloatArray());
                    writeFloats(out, v[wi].toFloatArray());
                    wi++;
                } else {
                    out.writeInt(bufferLengths[bi]);
                    writeFloats(out, b[bi].toFloatArray());
                    bi++;
                }
            }
            if (lossScale != null) {
                out.writeInt(LOSS_SCALE_TAG);
                out.writeFloat(lossScale[0]);
                out.writeFloat(lossScale[1]);
            }
            out.flush();
            return bytes.bytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@link DataOutputStream#writeUTF}'s length of {@code s}, its two length bytes included. */
    private static int utfLength(String s) {
        int n = 2;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            n += c >= 0x0001 && c <= 0x007F ? 1 : c <= 0x07FF ? 2 : 3;
        }
        return n;
    }

    /** A byte stream of a known final size, whose array is handed over rather than copied. */
    private static final class Exact extends ByteArrayOutputStream {
        Exact(int size) {
            super(size);
        }

        byte[] bytes() {
            return count == buf.length ? buf : toByteArray();
        }
    }

    /**
     * Checks the whole state against the model first, then copies it to the device.
     *
     * @return the global steps the state had applied
     */
    long decode(byte[] encoded, String modelName) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(encoded))) {
            int magic = in.readInt();
            if (magic != STATE_MAGIC && magic != UNET_STATE_MAGIC) {
                throw new IllegalStateException("not a training state of this accelerator");
            }
            // A run checkpointed by a build of before the name resumes (its UNet only).
            String saved = magic == STATE_MAGIC ? in.readUTF() : Unet3dNetwork.MODEL_NAME;
            if (!saved.equals(modelName)) {
                throw new IllegalStateException(
                        "the checkpoint holds a " + saved + " model; this run trains " + modelName);
            }
            long savedStep = in.readLong();
            int n = in.readInt();
            if (n != trainable.length) {
                throw new IllegalStateException(
                        "checkpoint has " + n + " parameters, the model " + trainable.length);
            }
            float[][] w = new float[weights.length][];
            float[][] v = new float[weights.length][];
            float[][] b = new float[buffers.length][];
            for (int i = 0, wi = 0, bi = 0; i < n; i++) {
                String name = in.readUTF();
                int length = in.readInt();
                int expected = trainable[i] ? lengths[wi] : bufferLengths[bi];
                if (!name.equals(named.get(i).getKey()) || length != expected) {
                    throw new IllegalStateException(
                            "checkpoint parameter "
                                    + name
                                    + " ("
                                    + length
                                    + " values) where the model has "
                                    + named.get(i).getKey()
                                    + " ("
                                    + expected
                                    + "): another width?");
                }
                if (trainable[i]) {
                    w[wi] = readFloats(in, length);
                    v[wi++] = readFloats(in, length);
                } else {
                    b[bi++] = readFloats(in, length);
                }
            }
            // A state of a mixed-precision run ends with its loss scale; one of float32 does not,
            // and either resumes in either precision (a float32 run ignores the scale).
            float[] lossScale = null;
            if (in.available() > 0) {
                if (in.readInt() != LOSS_SCALE_TAG) {
                    throw new IllegalStateException("the checkpoint has bytes after its arrays");
                }
                lossScale = new float[] {in.readFloat(), in.readFloat()};
            }
            for (int i = 0; i < weights.length; i++) {
                assign(weights[i], w[i]);
                assign(velocity[i], v[i]);
            }
            for (int i = 0; i < buffers.length; i++) {
                assign(buffers[i], b[i]);
            }
            if (half != null) {
                half.refresh();
                if (lossScale != null) {
                    half.scaler().restore(lossScale[0], lossScale[1]);
                }
            }
            return savedStep;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Copies {@code values} into {@code target} where it is (a master is a view of the flat array,
     * which {@code NDArray.set(float[])} would detach from it), outside autograd.
     */
    private static void assign(NDArray target, float[] values) {
        NoGrad.run(
                () -> {
                    try (NDArray source = target.getManager().create(values, target.getShape())) {
                        target.set(new NDIndex("..."), source);
                    }
                });
    }

    private static void writeFloats(DataOutputStream out, float[] values) throws IOException {
        // In slices through one small buffer: no second copy of a large array on the heap.
        ByteBuffer slice = ByteBuffer.allocate(Math.min(values.length, 1 << 14) * Float.BYTES);
        for (int from = 0; from < values.length; from += slice.capacity() / Float.BYTES) {
            int n = Math.min(slice.capacity() / Float.BYTES, values.length - from);
            slice.clear();
            slice.asFloatBuffer().put(values, from, n);
            out.write(slice.array(), 0, n * Float.BYTES);
        }
    }

    private static float[] readFloats(DataInputStream in, int length) throws IOException {
        byte[] bytes = new byte[Math.multiplyExact(length, Float.BYTES)];
        in.readFully(bytes);
        float[] values = new float[length];
        ByteBuffer.wrap(bytes).asFloatBuffer().get(values);
        return values;
    }
}
