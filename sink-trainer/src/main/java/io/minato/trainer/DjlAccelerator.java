package io.minato.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.util.Pair;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.unet.DiceCeLoss;
import io.minato.trainer.unet.Unet3d;
import io.minato.transform.Patch;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Real training on one device: the MLPerf 3D-UNet in DJL (PyTorch engine), Dice + cross-entropy,
 * SGD with momentum (PyTorch's update rule: optional weight decay and Nesterov) and a linear
 * learning-rate warm-up.
 *
 * <p>The step is split as data parallelism needs it: forward and backward on the device, then the
 * gradient goes through the {@link ReplicaGroup} (when {@link #replicate} joined one) and every
 * replica applies the same averaged update. The update runs on a host copy of the parameters and
 * the momentum, which is also what {@link #snapshot()} writes into the checkpoint, so a restored
 * run continues with both.
 */
public final class DjlAccelerator implements Accelerator {
    public static final String MODEL_NAME = "unet3d";

    private static final int STATE_MAGIC = 0x4D4E5331; // "MNS1"

    /** Parameter shapes do not depend on the patch: any multiple of 32 initialises them. */
    private static final Shape INIT_SHAPE = new Shape(1, 1, 32, 32, 32);

    /**
     * Model width, optimizer and seed (the train command holds the defaults). The learning rate
     * schedule is the MLPerf reference's: a linear warm-up from {@code warmupStartLearningRate} to
     * {@code learningRate} over {@code warmupSteps} global steps, then multiplied by {@code
     * decayFactor} at each of {@code decaySteps} (its MultiStepLR milestones, here in steps).
     */
    public record Settings(
            double width,
            float learningRate,
            float momentum,
            float weightDecay,
            boolean nesterov,
            int warmupSteps,
            long seed,
            float warmupStartLearningRate,
            List<Long> decaySteps,
            float decayFactor)
            implements Serializable {
        public Settings {
            if (!(width > 0)
                    || !(learningRate >= 0)
                    || !(momentum >= 0)
                    || !(weightDecay >= 0)
                    || !(warmupStartLearningRate >= 0)
                    || !(decayFactor > 0)) {
                throw new IllegalArgumentException(
                        "width and decay factor must be > 0; learning rates, momentum and weight"
                                + " decay >= 0");
            }
            if (warmupSteps < 0) {
                throw new IllegalArgumentException("warm-up steps must be >= 0: " + warmupSteps);
            }
            decaySteps = List.copyOf(decaySteps);
            for (int i = 0; i < decaySteps.size(); i++) {
                if (decaySteps.get(i) < 1
                        || (i > 0 && decaySteps.get(i) <= decaySteps.get(i - 1))) {
                    throw new IllegalArgumentException(
                            "decay steps must be increasing and >= 1: " + decaySteps);
                }
            }
        }

        /** No warm-up start value and no decay. */
        public Settings(
                double width,
                float learningRate,
                float momentum,
                float weightDecay,
                boolean nesterov,
                int warmupSteps,
                long seed) {
            this(
                    width,
                    learningRate,
                    momentum,
                    weightDecay,
                    nesterov,
                    warmupSteps,
                    seed,
                    0f,
                    List.of(),
                    1f);
        }

        /** Plain SGD with momentum: no weight decay, no Nesterov, no decay. */
        public Settings(
                double width, float learningRate, float momentum, int warmupSteps, long seed) {
            this(width, learningRate, momentum, 0f, false, warmupSteps, seed);
        }

        /** The learning rate of global step {@code step} (1-based). */
        public float learningRate(long step) {
            if (step < warmupSteps) {
                return (float)
                        (warmupStartLearningRate
                                + (learningRate - warmupStartLearningRate)
                                        * ((double) step / warmupSteps));
            }
            double lr = learningRate;
            for (long milestone : decaySteps) {
                if (step >= milestone) {
                    lr *= decayFactor;
                }
            }
            return (float) lr;
        }
    }

    /**
     * Creates the trainer of each device.
     *
     * @param devices device names per device index ("cpu", "gpu:1" or "gpu1"); empty: all on the
     *     CPU
     */
    public record Factory(Settings settings, List<String> devices) implements AcceleratorFactory {
        public Factory {
            devices = List.copyOf(devices);
        }

        public Factory(Settings settings) {
            this(settings, List.of());
        }

        @Override
        public Accelerator create(int device, int count) {
            return new DjlAccelerator(settings, device(device));
        }

        /** The DJL device of replica {@code device}. */
        public Device device(int device) {
            return devices.isEmpty() ? Device.cpu() : DeviceSpec.djlDevice(devices.get(device));
        }
    }

    private final Settings settings;
    private final Device device;
    private ReplicaGroup.Member member; // null: trains alone
    private Model model;
    private Trainer trainer;
    private List<Parameter> parameters;
    private float[][] weights; // host copy of the parameters, in parameter order
    private float[][] velocity; // SGD momentum buffers
    private int gradientLength;
    private long step; // global steps applied
    private byte[] pendingRestore;

    public DjlAccelerator(Settings settings) {
        this(settings, Device.cpu());
    }

    public DjlAccelerator(Settings settings, Device device) {
        this.settings = settings;
        this.device = device;
    }

    @Override
    public String kind() {
        return device.isGpu() ? "gpu" : "cpu";
    }

    /**
     * NVML's GPU of this device's index when it is a GPU, else absent. NVML numbers GPUs in PCI bus
     * order; CUDA, and so DJL, the same only with {@code CUDA_DEVICE_ORDER=PCI_BUS_ID} and no
     * {@code CUDA_VISIBLE_DEVICES} (see {@link io.minato.trainer.gpu.GpuProbe}).
     */
    @Override
    public GpuMonitor gpuMonitor() {
        return device.isGpu() ? GpuMonitor.open(device.getDeviceId()) : GpuMonitor.absent();
    }

    @Override
    public boolean replicated() {
        return true;
    }

    @Override
    public void replicate(ReplicaGroup.Member member) {
        this.member = member;
    }

    /** Global steps applied so far. */
    public long step() {
        return step;
    }

    @Override
    public StepResult train(Batch batch) throws InterruptedException {
        long start = System.nanoTime();
        initialize();
        Shape shape = shapeOf(batch);
        float loss;
        float[] gradient;
        try (NDManager scope = trainer.getManager().newSubManager()) {
            NDArray x = scope.create(images(batch), shape);
            NDArray y = scope.create(labels(batch), shape);
            // Not DJL's GradientCollector: it allows one collector per JVM, and replicas train at
            // the same time. Grad mode is per thread in libtorch.
            boolean gradMode = JniUtils.isGradMode();
            JniUtils.setGradMode(true);
            try {
                NDList prediction = trainer.forward(new NDList(x));
                NDArray l = trainer.getLoss().evaluate(new NDList(y), prediction);
                JniUtils.backward(
                        (PtNDArray) l, (PtNDArray) scope.ones(l.getShape()), false, false);
                loss = l.getFloat();
            } finally {
                if (!gradMode) {
                    JniUtils.setGradMode(false);
                }
            }
            gradient = takeGradients();
        }
        int samples = batch.samples().size();
        float[] average = member == null ? gradient : member.allReduce(step + 1, gradient, samples);
        if (average == null) {
            throw new IllegalStateException("the replica group ended during a step with data");
        }
        update(average);
        return new StepResult(loss, System.nanoTime() - start);
    }

    /**
     * A step without data of this device's own: posts nothing and applies the others' update.
     *
     * @return false when no replica had data: training is over
     */
    @Override
    public boolean idleStep() throws InterruptedException {
        if (member == null) {
            return false;
        }
        initialize();
        float[] average = member.allReduce(step + 1, null, 0);
        if (average == null) {
            return false;
        }
        update(average);
        return true;
    }

    private void initialize() throws InterruptedException {
        if (model != null) {
            return;
        }
        Engine.getInstance().setRandomSeed((int) settings.seed());
        model = Model.newInstance(MODEL_NAME, device);
        model.setBlock(Unet3d.builder().optWidth(settings.width()).build());
        // The optimizer is ours (update below); DJL's trainer runs forward and the loss.
        trainer =
                model.newTrainer(
                        new DefaultTrainingConfig(DiceCeLoss.builder().build())
                                .optDevices(new Device[] {device}));
        trainer.initialize(INIT_SHAPE);
        parameters = new ArrayList<>();
        for (Pair<String, Parameter> p : model.getBlock().getParameters()) {
            parameters.add(p.getValue());
        }
        weights = new float[parameters.size()][];
        velocity = new float[parameters.size()][];
        gradientLength = 0;
        for (int i = 0; i < weights.length; i++) {
            weights[i] = parameters.get(i).getArray().toFloatArray();
            velocity[i] = new float[weights[i].length];
            gradientLength = Math.addExact(gradientLength, weights[i].length);
        }
        if (pendingRestore != null) {
            decodeState(pendingRestore);
            pendingRestore = null;
        }
        if (member != null) {
            // Replica 0's state, fresh or restored, is everyone's: replicas cannot diverge.
            byte[] state = member.initialState(member.replica() == 0 ? encodeState() : null, step);
            if (member.replica() != 0) {
                decodeState(state);
            }
        }
        for (int i = 0; i < weights.length; i++) {
            parameters.get(i).getArray().set(weights[i]);
        }
    }

    /** Copies every parameter's gradient into one vector and zeroes it for the next step. */
    private float[] takeGradients() {
        float[] flat = new float[gradientLength];
        int offset = 0;
        for (Parameter p : parameters) {
            try (NDArray g = p.getArray().getGradient()) {
                float[] values = g.toFloatArray();
                System.arraycopy(values, 0, flat, offset, values.length);
                offset += values.length;
                g.subi(g);
            }
        }
        return flat;
    }

    /** PyTorch's SGD step (dampening 0) on the host copy, then onto the device. */
    private void update(float[] gradient) {
        step++;
        float lr = settings.learningRate(step);
        float m = settings.momentum();
        float wd = settings.weightDecay();
        boolean nesterov = settings.nesterov();
        int offset = 0;
        for (int i = 0; i < weights.length; i++) {
            float[] w = weights[i];
            float[] v = velocity[i];
            for (int j = 0; j < w.length; j++) {
                float g = gradient[offset + j] + wd * w[j];
                v[j] = m * v[j] + g;
                w[j] -= lr * (nesterov ? g + m * v[j] : v[j]);
            }
            offset += w.length;
            parameters.get(i).getArray().set(w);
        }
    }

    /**
     * Parameters, momentum and step, as of the last applied step. The writer calls this only at a
     * step boundary (or while the step waits in the all-reduce, before it touches anything).
     */
    @Override
    public byte[] snapshot() {
        if (model == null) {
            return pendingRestore != null ? pendingRestore : new byte[0];
        }
        return encodeState();
    }

    @Override
    public void restore(byte[] state) {
        if (state.length == 0) {
            return;
        }
        if (model == null) {
            pendingRestore = state; // applied when the model exists
        } else {
            decodeState(state);
            for (int i = 0; i < weights.length; i++) {
                parameters.get(i).getArray().set(weights[i]);
            }
        }
    }

    private byte[] encodeState() {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(STATE_MAGIC);
            out.writeLong(step);
            out.writeInt(weights.length);
            var named = model.getBlock().getParameters();
            for (int i = 0; i < weights.length; i++) {
                out.writeUTF(named.get(i).getKey());
                out.writeInt(weights[i].length);
                writeFloats(out, weights[i]);
                writeFloats(out, velocity[i]);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void decodeState(byte[] state) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(state))) {
            if (in.readInt() != STATE_MAGIC) {
                throw new IllegalStateException("not a 3D-UNet training state");
            }
            long savedStep = in.readLong();
            int n = in.readInt();
            var named = model.getBlock().getParameters();
            if (n != weights.length) {
                throw new IllegalStateException(
                        "checkpoint has " + n + " parameters, the model " + weights.length);
            }
            float[][] w = new float[n][];
            float[][] v = new float[n][];
            for (int i = 0; i < n; i++) {
                String name = in.readUTF();
                int length = in.readInt();
                if (!name.equals(named.get(i).getKey()) || length != weights[i].length) {
                    throw new IllegalStateException(
                            "checkpoint parameter "
                                    + name
                                    + " ("
                                    + length
                                    + " values) where the model has "
                                    + named.get(i).getKey()
                                    + " ("
                                    + weights[i].length
                                    + "): another width?");
                }
                w[i] = readFloats(in, length);
                v[i] = readFloats(in, length);
            }
            weights = w;
            velocity = v;
            step = savedStep;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void writeFloats(DataOutputStream out, float[] values) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(values.length * Float.BYTES);
        buffer.asFloatBuffer().put(values);
        out.write(buffer.array());
    }

    private static float[] readFloats(DataInputStream in, int length) throws IOException {
        byte[] bytes = new byte[Math.multiplyExact(length, Float.BYTES)];
        in.readFully(bytes);
        float[] values = new float[length];
        ByteBuffer.wrap(bytes).asFloatBuffer().get(values);
        return values;
    }

    /** Initialises the model now, as the first step would, and returns its state. */
    byte[] initializedState() throws InterruptedException {
        initialize();
        return encodeState();
    }

    /** The model's parameters (after the first step), for tests and checks. */
    ai.djl.nn.ParameterList parameters() {
        return model.getBlock().getParameters();
    }

    /**
     * Saves the trained model in DJL's format: {@code model-device-<d>/unet3d-0000.params}.
     * Replicas hold identical parameters, so only the first device of a group saves.
     */
    @Override
    public void finish(Path outputDir, int device) throws IOException {
        if (model != null && (member == null || member.replica() == 0)) {
            model.save(outputDir.resolve("model-device-" + device), MODEL_NAME);
        }
    }

    @Override
    public void close() {
        if (trainer != null) {
            trainer.close();
        }
        if (model != null) {
            model.close();
        }
    }

    private static Shape shapeOf(Batch batch) {
        var s = batch.samples().get(0).patch().shape();
        return new Shape(batch.samples().size(), 1, s.d(), s.h(), s.w());
    }

    private static float[] images(Batch batch) {
        int n = (int) batch.samples().get(0).patch().shape().voxels();
        float[] out = new float[n * batch.samples().size()];
        int i = 0;
        for (PreparedSample s : batch.samples()) {
            System.arraycopy(s.patch().image(), 0, out, i++ * n, n);
        }
        return out;
    }

    private static float[] labels(Batch batch) {
        int n = (int) batch.samples().get(0).patch().shape().voxels();
        float[] out = new float[n * batch.samples().size()];
        int i = 0;
        for (PreparedSample s : batch.samples()) {
            Patch p = s.patch();
            for (int k = 0; k < n; k++) {
                out[i * n + k] = p.label()[k];
            }
            i++;
        }
        return out;
    }
}
