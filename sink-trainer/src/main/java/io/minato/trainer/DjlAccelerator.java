package io.minato.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import io.minato.loader.SampleRecipe;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.gpu.FlinkGpus;
import io.minato.trainer.gpu.GpuMonitor;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real training on one device: the settings' {@link Network} in DJL (PyTorch engine; the MLPerf
 * 3D-UNet with Dice + cross-entropy, or an {@link ImageClassifier}), SGD with momentum (PyTorch's
 * update rule: optional weight decay and Nesterov) and a linear learning-rate warm-up.
 *
 * <p>The step stays on the device. Parameters, gradients and momentum live there; the update is a
 * few in-place array operations per parameter, run where the parameter is. Alone (one device, or a
 * {@link ReplicaGroup} of one) nothing but the batch goes up and the loss (4 bytes) comes down per
 * step. With replicas, each device's gradients are gathered into one flat array on the device,
 * copied to the host once, averaged by the group, and the average goes back in one copy; every
 * replica then applies the same update to the same parameters, so replicas stay bit-identical.
 * Parameters and momentum reach the host only for {@link #snapshot()} (a checkpoint), so a restored
 * run continues with both.
 *
 * <p>Arrays a network keeps without training them, batch norm's running mean and variance, take no
 * gradient and no update: the forward pass moves them in place. They travel with the parameters in
 * snapshots and in the saved model. With replicas, each normalises its own batch (as DDP without
 * SyncBatchNorm) and the statistics join the gradients' all-reduce, averaged by samples as they
 * are: replicas stay identical, the running mean follows the global batch's mean and the running
 * variance the replicas' average variance (DDP instead copies replica 0's statistics to all).
 */
public final class DjlAccelerator implements Accelerator {
    private static final Logger LOG = LoggerFactory.getLogger(DjlAccelerator.class);

    /** The 3D-UNet's saved name (the kits19 workload's model). */
    public static final String MODEL_NAME = Unet3dNetwork.MODEL_NAME;

    private static final int STATE_MAGIC = 0x4D4E5332; // "MNS2": names its network

    /** The state before networks were named: the same layout without the name, a 3D-UNet's. */
    private static final int UNET_STATE_MAGIC = 0x4D4E5331; // "MNS1"

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
            float decayFactor,
            Network network)
            implements Serializable {
        public Settings {
            if (network == null) {
                network = new Unet3dNetwork(width);
            }
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

        /** The 3D-UNet of {@code width}. */
        public Settings(
                double width,
                float learningRate,
                float momentum,
                float weightDecay,
                boolean nesterov,
                int warmupSteps,
                long seed,
                float warmupStartLearningRate,
                List<Long> decaySteps,
                float decayFactor) {
            this(
                    width,
                    learningRate,
                    momentum,
                    weightDecay,
                    nesterov,
                    warmupSteps,
                    seed,
                    warmupStartLearningRate,
                    decaySteps,
                    decayFactor,
                    null);
        }

        /** The same optimizer training another network. */
        public Settings withNetwork(Network other) {
            return new Settings(
                    width,
                    learningRate,
                    momentum,
                    weightDecay,
                    nesterov,
                    warmupSteps,
                    seed,
                    warmupStartLearningRate,
                    decaySteps,
                    decayFactor,
                    other);
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
     * @param devices device names per device index ("cpu", "gpu:1" or "gpu1", or {@link
     *     FlinkGpus#DEVICE_NAME}: the GPU Flink's external resource framework gave the trainer's
     *     TaskManager); empty: all on the CPU
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
            return create(device, count, FlinkGpus.of(List.of()));
        }

        @Override
        public Accelerator create(int device, int count, FlinkGpus gpus) {
            if (!devices.isEmpty() && devices.get(device).equals(FlinkGpus.DEVICE_NAME)) {
                int gpu = gpus.forReplica(device, count);
                int torchGpus = Engine.getEngine("PyTorch").getGpuCount();
                if (gpu < torchGpus) {
                    LOG.info(
                            "device {}: GPU {} from Flink's external resource '{}' ({})",
                            device,
                            gpu,
                            FlinkGpus.RESOURCE,
                            gpus);
                    return new DjlAccelerator(settings, Device.gpu(gpu));
                }
                LOG.warn(
                        "device {}: Flink gave this TaskManager GPU {} ({}), but its PyTorch sees"
                                + " {} GPU(s) (a CPU build of libtorch?): training on the CPU",
                        device,
                        gpu,
                        gpus,
                        torchGpus);
                return new DjlAccelerator(settings, Device.cpu());
            }
            return new DjlAccelerator(settings, device(device));
        }

        /**
         * The DJL device of replica {@code device}; for a GPU of Flink's, which only its
         * TaskManager knows, this JVM's first GPU if its PyTorch has one, else the CPU (where the
         * client evaluates the model).
         */
        public Device device(int device) {
            if (devices.isEmpty()) {
                return Device.cpu();
            }
            if (devices.get(device).equals(FlinkGpus.DEVICE_NAME)) {
                return Engine.getEngine("PyTorch").getGpuCount() > 0 ? Device.gpu(0) : Device.cpu();
            }
            return DeviceSpec.djlDevice(devices.get(device));
        }
    }

    private final Settings settings;
    private final Device device;
    private ReplicaGroup.Member member; // null: trains alone
    private Model model;
    private Trainer trainer;
    private NDManager state; // the momentum buffers and the optimizer's constants, on the device
    private NDArray[] velocity; // SGD momentum buffers, in trainable parameter order
    private int[] lengths; // values per trainable parameter
    private long gradientLength;
    private NDArray[] weights; // the trainable parameters' arrays, in parameter order
    private NDArray[] buffers; // the arrays trained by no gradient (running statistics), in order
    private int[] bufferLengths;
    private long bufferLength;
    private boolean[] trainable; // per parameter of the block, in its order
    private DeviceSgd sgd;
    // The batch's bytes on their way to the device, in reused direct buffers: the step's pair,
    // and the pair the next batch is staged in while the device computes.
    private final Inputs[] inputs = {new Inputs(), new Inputs()};
    private int current;
    private long stagedSteps;
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
        return train(batch, null);
    }

    @Override
    public StepResult train(Batch batch, Batch next) throws InterruptedException {
        long start = System.nanoTime();
        initialize();
        int samples = batch.samples().size();
        try (NDManager scope = trainer.getManager().newSubManager()) {
            Inputs in = inputs[current];
            if (in.staged != batch) {
                in.stage(batch, settings.network());
            } else {
                stagedSteps++;
            }
            in.staged = null;
            NDArray x = scope.create(in.images, in.imageShape, DataType.FLOAT32);
            NDArray y = settings.network().labels(batch, in.labels, scope);
            // Not DJL's GradientCollector: it allows one collector per JVM, and replicas train at
            // the same time. Grad mode is per thread in libtorch.
            boolean gradMode = JniUtils.isGradMode();
            JniUtils.setGradMode(true);
            NDArray l;
            try {
                NDList prediction = trainer.forward(new NDList(x));
                l = trainer.getLoss().evaluate(new NDList(y), prediction);
                JniUtils.backward(
                        (PtNDArray) l, (PtNDArray) scope.ones(l.getShape()), false, false);
            } finally {
                JniUtils.setGradMode(gradMode);
            }
            NDArray[] gradients = gradients(scope);
            long waited;
            if (member == null || member.size() == 1) {
                // Alone: the group (if any) only orders the step against checkpoint cuts.
                long t = System.nanoTime();
                if (member != null && member.allReduce(step + 1, ALONE, samples) == null) {
                    throw new IllegalStateException("the replica group ended during a step");
                }
                waited = System.nanoTime() - t;
                update(gradients, scope);
            } else {
                float[] flat = flatten(gradients, scope);
                long t = System.nanoTime();
                float[] average = member.allReduce(step + 1, flat, samples);
                waited = System.nanoTime() - t;
                if (average == null) {
                    throw new IllegalStateException(
                            "the replica group ended during a step with data");
                }
                applyAverage(average, scope);
            }
            zeroGradients();
            // While a GPU runs the queued step, the host copies the next batch into the other
            // pair of buffers (on the CPU this step has run already: it only comes earlier).
            current = 1 - current;
            if (next != null && next != batch && SampleRecipe.missing(next) == 0) {
                try {
                    inputs[current].stage(next, settings.network());
                } catch (IllegalArgumentException e) {
                    inputs[current].staged = null; // its own step says what is wrong with it
                }
            }
            // The one value that leaves the device per step; read after the update is queued.
            float loss = l.getFloat();
            return new StepResult(loss, busyNanos(System.nanoTime() - start, waited, device));
        }
    }

    /**
     * A step's busy time: on a GPU the step less the time it waited on the host for the other
     * replicas (or a checkpoint cut), which the GPU spends idle; on the CPU the whole step, as the
     * CPU replicas' figure always was.
     */
    static long busyNanos(long stepNanos, long waitedNanos, Device device) {
        return device.isGpu() ? Math.max(0, stepNanos - waitedNanos) : stepNanos;
    }

    /**
     * What a device alone posts to its group of one: the gradient stays on the device, the group
     * only orders the step against checkpoint cuts.
     */
    private static final float[] ALONE = new float[0];

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
        try (NDManager scope = trainer.getManager().newSubManager()) {
            applyAverage(average, scope);
        }
        return true;
    }

    private void initialize() throws InterruptedException {
        if (model != null) {
            return;
        }
        Engine.getInstance().setRandomSeed((int) settings.seed());
        Network network = settings.network();
        model = Model.newInstance(network.modelName(), device);
        model.setBlock(network.newBlock());
        // The optimizer is ours (update below); DJL's trainer runs forward and the loss.
        trainer =
                model.newTrainer(
                        new DefaultTrainingConfig(network.newLoss())
                                .optDevices(new Device[] {device}));
        trainer.initialize(network.initShape());
        List<Parameter> parameters = new ArrayList<>();
        List<Parameter> untrained = new ArrayList<>();
        var all = model.getBlock().getParameters();
        trainable = new boolean[all.size()];
        for (int i = 0; i < trainable.length; i++) {
            Parameter p = all.get(i).getValue();
            // DJL's own flag: batch norm's running statistics say no, every weight yes.
            trainable[i] = p.requiresGradient();
            (trainable[i] ? parameters : untrained).add(p);
        }
        state = trainer.getManager().newSubManager();
        weights = new NDArray[parameters.size()];
        velocity = new NDArray[parameters.size()];
        lengths = new int[parameters.size()];
        gradientLength = 0;
        for (int i = 0; i < weights.length; i++) {
            weights[i] = parameters.get(i).getArray();
            velocity[i] = state.zeros(weights[i].getShape(), DataType.FLOAT32);
            lengths[i] = Math.toIntExact(weights[i].size());
            gradientLength += lengths[i];
        }
        buffers = new NDArray[untrained.size()];
        bufferLengths = new int[untrained.size()];
        bufferLength = 0;
        for (int i = 0; i < buffers.length; i++) {
            buffers[i] = untrained.get(i).getArray();
            bufferLengths[i] = Math.toIntExact(buffers[i].size());
            bufferLength += bufferLengths[i];
        }
        sgd =
                new DeviceSgd(
                        state, settings.momentum(), settings.weightDecay(), settings.nesterov());
        if (pendingRestore != null) {
            decodeState(pendingRestore);
            pendingRestore = null;
        }
        if (member != null) {
            // Replica 0's state, fresh or restored, is everyone's: replicas cannot diverge.
            byte[] initial =
                    member.initialState(member.replica() == 0 ? encodeState() : null, step);
            if (member.replica() != 0) {
                decodeState(initial);
            }
        }
    }

    /** Each parameter's gradient, as arrays of {@code scope} (views of libtorch's buffers). */
    private NDArray[] gradients(NDManager scope) {
        NDArray[] g = new NDArray[weights.length];
        for (int i = 0; i < g.length; i++) {
            g[i] = weights[i].getGradient();
            g[i].attach(scope);
        }
        return g;
    }

    /** Zeroes the gradients libtorch accumulates into, for the next backward pass. */
    private void zeroGradients() {
        for (NDArray w : weights) {
            JniUtils.zeroGrad((PtNDArray) w);
        }
    }

    /**
     * The gradients, then the running statistics, as one host vector: gathered on the device, one
     * copy down.
     */
    private float[] flatten(NDArray[] gradients, NDManager scope) {
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
     * The replicas' averaged vector back on the device in one copy: the gradients' part as the
     * update, the running statistics' part copied over this replica's own on the device.
     */
    private void applyAverage(float[] average, NDManager scope) {
        if (average.length != gradientLength + bufferLength) {
            throw new IllegalStateException(
                    "averaged gradient of "
                            + average.length
                            + " values for a model of "
                            + (gradientLength + bufferLength));
        }
        NDArray all = scope.create(average);
        NDArray[] g = new NDArray[weights.length];
        long offset = 0;
        for (int i = 0; i < g.length; i++) {
            g[i] =
                    all.get(new NDIndex("{}:{}", offset, offset + lengths[i]))
                            .reshape(weights[i].getShape());
            offset += lengths[i];
        }
        update(g, scope);
        for (int i = 0; i < buffers.length; i++) {
            NDArray mean =
                    all.get(new NDIndex("{}:{}", offset, offset + bufferLengths[i]))
                            .reshape(buffers[i].getShape());
            buffers[i].set(new NDIndex("..."), mean);
            offset += bufferLengths[i];
        }
    }

    /** The next global step's update, on the device. */
    private void update(NDArray[] gradients, NDManager scope) {
        step++;
        sgd.apply(weights, gradients, velocity, settings.learningRate(step), scope);
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
        }
    }

    /**
     * Parameters and momentum, copied from the device: a checkpoint's cost, not a step's. Every
     * array of the block in its order, each with its name and length, its values and, where it is
     * trained, its momentum: a network without running statistics (the 3D-UNet) writes what it
     * always did.
     */
    private byte[] encodeState() {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(STATE_MAGIC);
            out.writeUTF(settings.network().modelName());
            out.writeLong(step);
            out.writeInt(trainable.length);
            var named = model.getBlock().getParameters();
            for (int i = 0, w = 0, b = 0; i < trainable.length; i++) {
                out.writeUTF(named.get(i).getKey());
                if (trainable[i]) {
                    out.writeInt(lengths[w]);
                    writeFloats(out, weights[w].toFloatArray());
                    writeFloats(out, velocity[w].toFloatArray());
                    w++;
                } else {
                    out.writeInt(bufferLengths[b]);
                    writeFloats(out, buffers[b].toFloatArray());
                    b++;
                }
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Checks the whole state against the model first, then copies it to the device. */
    private void decodeState(byte[] encoded) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(encoded))) {
            int magic = in.readInt();
            if (magic != STATE_MAGIC && magic != UNET_STATE_MAGIC) {
                throw new IllegalStateException("not a training state of this accelerator");
            }
            // A run checkpointed by a build of before the name resumes (its UNet only).
            String saved = magic == STATE_MAGIC ? in.readUTF() : Unet3dNetwork.MODEL_NAME;
            if (!saved.equals(settings.network().modelName())) {
                throw new IllegalStateException(
                        "the checkpoint holds a "
                                + saved
                                + " model; this run trains "
                                + settings.network().modelName());
            }
            long savedStep = in.readLong();
            int n = in.readInt();
            var named = model.getBlock().getParameters();
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
            for (int i = 0; i < weights.length; i++) {
                weights[i].set(w[i]);
                velocity[i].set(v[i]);
            }
            for (int i = 0; i < buffers.length; i++) {
                buffers[i].set(b[i]);
            }
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
     * Saves the trained model in DJL's format: {@code model-device-<d>/<name>-0000.params}, the
     * name the network's ({@code unet3d}, {@code cnn2d}). Replicas hold identical parameters, so
     * only the first device of a group saves.
     */
    @Override
    public void finish(Path outputDir, int device) throws IOException {
        if (model != null && (member == null || member.replica() == 0)) {
            model.save(outputDir.resolve("model-device-" + device), settings.network().modelName());
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

    /** Steps whose batch was staged while the step before it ran (for tests). */
    long stagedSteps() {
        return stagedSteps;
    }

    /**
     * A batch's inputs in the network's layout ((N, 1, D, H, W) for the 3D-UNet, (N, C, H, W) for a
     * 2D network) and its targets, each patch copied once into reused direct buffers, which
     * libtorch reads in place on the CPU and copies once to a GPU.
     */
    private static final class Inputs {
        private ByteBuffer imageBuffer;
        private ByteBuffer labelBuffer;
        ByteBuffer images;
        ByteBuffer labels;
        Shape imageShape;
        Batch staged; // the batch these buffers hold, until its step takes them

        void stage(Batch batch, Network network) {
            var s = batch.samples().get(0).patch().shape();
            try {
                imageShape = network.inputShape(batch.samples().size(), s);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "batch " + batch.sequence() + " holds " + e.getMessage(), e);
            }
            int n = Math.toIntExact(s.voxels());
            int bytes =
                    Math.multiplyExact(Math.multiplyExact(n, batch.samples().size()), Float.BYTES);
            if (imageBuffer == null || imageBuffer.capacity() < bytes) {
                imageBuffer = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
            }
            images = imageBuffer.clear().limit(bytes);
            var floats = images.asFloatBuffer();
            int labelBytes = 0;
            for (PreparedSample sample : batch.samples()) {
                if (!sample.patch().shape().equals(s)) {
                    throw new IllegalArgumentException(
                            "batch " + batch.sequence() + " mixes patch shapes");
                }
                floats.put(sample.patch().image());
                labelBytes = Math.addExact(labelBytes, sample.patch().label().length);
            }
            if (labelBuffer == null || labelBuffer.capacity() < labelBytes) {
                labelBuffer = ByteBuffer.allocateDirect(labelBytes).order(ByteOrder.nativeOrder());
            }
            labels = labelBuffer.clear().limit(labelBytes);
            for (PreparedSample sample : batch.samples()) {
                labels.put(sample.patch().label());
            }
            labels.flip();
            staged = batch;
        }
    }
}
