package io.minato.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.tracker.Tracker;
import io.minato.loader.SampleRecipe;
import io.minato.sample.Batch;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.gpu.FlinkGpus;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.gpu.TrainingDevice;
import io.minato.trainer.images.ImageClassifier;
import io.minato.trainer.kits19.Unet3dNetwork;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real training on one device: the settings' {@link Network} in DJL (PyTorch engine; the MLPerf
 * 3D-UNet with Dice + cross-entropy, or an {@link ImageClassifier}), SGD with momentum (PyTorch's
 * update rule: optional weight decay and Nesterov) at the rates of the settings' {@link
 * TrainingSettings#learningRates() schedule}, in float32 or in mixed precision ({@link Precision}).
 *
 * <p>The step stays on the device. Parameters, gradients and momentum live there ({@link
 * DeviceParameters}); the update is a few in-place array operations per parameter, run where the
 * parameter is. Alone (one device, or a {@link ReplicaGroup} of one) nothing but the batch goes up
 * and the loss (4 bytes) comes down per step. With replicas, each device's gradients are gathered
 * into one flat array on the device, copied to the host once, averaged by the group, and the
 * average goes back in one copy; every replica then applies the same update to the same parameters,
 * so replicas stay bit-identical. Parameters and momentum reach the host only for {@link
 * #snapshot()} (a checkpoint), so a restored run continues with both.
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

    /**
     * Creates the trainer of each device.
     *
     * @param devices the device of each trainer replica, by replica index ({@link
     *     TrainingDevice.Kind#FLINK_GPU}: the GPU Flink's external resource framework gave the
     *     trainer's TaskManager); empty: all on the CPU
     */
    public record Factory(TrainingSettings settings, List<TrainingDevice> devices)
            implements AcceleratorFactory {
        public Factory {
            devices = List.copyOf(devices);
        }

        public Factory(TrainingSettings settings) {
            this(settings, List.of());
        }

        @Override
        public Accelerator create(int device, int count) throws IOException {
            return create(device, count, FlinkGpus.of(List.of()));
        }

        @Override
        public Accelerator create(int device, int count, FlinkGpus gpus) throws IOException {
            if (fromFlink(device)) {
                int gpu = gpus.forReplica(device, count);
                int torchGpus = DeviceSpec.torchGpus();
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
                                + " {} GPU(s) (a CPU build of libtorch?): training on the CPU{}",
                        device,
                        gpu,
                        gpus,
                        torchGpus,
                        settings.precision() == Precision.FP16
                                ? ", in fp16 as the run's other devices (slow on a CPU;"
                                        + " --precision fp32 avoids it)"
                                : "");
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
            if (fromFlink(device)) {
                return DeviceSpec.torchGpus() > 0 ? Device.gpu(0) : Device.cpu();
            }
            return DeviceSpec.djlDevice(devices.get(device));
        }

        private boolean fromFlink(int device) {
            return !devices.isEmpty()
                    && devices.get(device).kind() == TrainingDevice.Kind.FLINK_GPU;
        }
    }

    private final TrainingSettings settings;
    private final Device device;
    private final Precision precision; // FP32 or FP16
    private final Tracker learningRates;
    private ReplicaGroup.Member member; // null: trains alone
    private Model model;
    private Trainer trainer;
    private NDManager state; // the momentum buffers and the optimizer's constants, on the device
    private DeviceParameters parameters;
    private DeviceSgd sgd;
    // The batch's bytes on their way to the device, in reused direct buffers: the step's pair,
    // and the pair the next batch is staged in while the device computes.
    private final BatchInputs[] inputs = {new BatchInputs(), new BatchInputs()};
    private int current;
    private long stagedSteps;
    private long step; // global steps applied
    private byte[] pendingRestore;
    // Set, with pendingRestore cleared, once the model is built, restored and shared: until then
    // a snapshot (taken while the trainer's thread prepares) gives the state as restored.
    private final Object published = new Object();
    private volatile boolean ready;
    private int threads; // libtorch's CPU threads for this trainer; 0: its default

    public DjlAccelerator(TrainingSettings settings) {
        this(settings, Device.cpu());
    }

    /** Where each phase of the steps goes; null but in {@code step-time}. */
    private StepProfile profile;

    /**
     * A trainer on {@code device}, in the settings' precision ({@link Precision#AUTO}: float16 on a
     * GPU, float32 on the CPU; a run resolves it once for all its devices).
     */
    public DjlAccelerator(TrainingSettings settings, Device device) {
        this.settings = settings;
        this.device = device;
        this.precision = settings.precision().forDevice(device.isGpu());
        this.learningRates = settings.learningRates();
    }

    /** The precision this trainer's steps compute in: FP32 or FP16. */
    public Precision precision() {
        return precision;
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

    @Override
    public void useThreads(int threads) {
        this.threads = threads;
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
            if (profile != null) {
                profile.begin();
            }
            BatchInputs in = inputs[current];
            if (in.staged != batch) {
                in.stage(batch, settings.network());
            } else {
                stagedSteps++;
            }
            in.staged = null;
            NDArray x = scope.create(in.images, in.imageShape, DataType.FLOAT32);
            NDArray y = settings.network().labels(batch, in.labels, scope);
            phaseEnded(StepProfile.Phase.COPY, x);
            // Not DJL's GradientCollector: it allows one collector per JVM, and replicas train at
            // the same time. Grad mode is per thread in libtorch.
            boolean gradMode = JniUtils.isGradMode();
            JniUtils.setGradMode(true);
            NDArray l;
            try {
                NDList prediction = parameters.forward(trainer, x);
                l = trainer.getLoss().evaluate(new NDList(y), parameters.forLoss(prediction));
                phaseEnded(StepProfile.Phase.FORWARD, l);
                JniUtils.backward(
                        (PtNDArray) l, (PtNDArray) parameters.lossGradient(l, scope), false, false);
            } finally {
                JniUtils.setGradMode(gradMode);
            }
            NDArray[] gradients = parameters.gradients(scope);
            phaseEnded(StepProfile.Phase.BACKWARD, l);
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
                float[] flat = parameters.flatten(gradients, scope);
                long t = System.nanoTime();
                float[] average = member.allReduce(step + 1, flat, samples);
                waited = System.nanoTime() - t;
                if (average == null) {
                    throw new IllegalStateException(
                            "the replica group ended during a step with data");
                }
                update(parameters.takeAverage(average, scope), scope);
            }
            parameters.zeroGradients();
            phaseEnded(StepProfile.Phase.UPDATE, l);
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
     * Times each phase of the steps from now on into {@code profile} ({@code step-time}); a
     * training run profiles nothing.
     */
    public void profile(StepProfile profile) {
        this.profile = profile;
    }

    /**
     * Ends {@code phase} of a profiled step once the work it queued is done: on a GPU, a read of
     * one value of {@code queued} waits for all the work queued before it on the device's stream.
     */
    private void phaseEnded(StepProfile.Phase phase, NDArray queued) {
        if (profile == null) {
            return;
        }
        if (device.isGpu()) {
            try (NDArray flat = queued.reshape(-1);
                    NDArray first = flat.get(0)) {
                first.toByteBuffer();
            }
        }
        profile.ended(phase);
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
        return applyTheOthers(member.allReduce(step + 1, null, 0));
    }

    @Override
    public void stepWithoutSamples() throws InterruptedException {
        if (member == null || member.size() == 1) {
            return; // alone: no step
        }
        initialize();
        if (!applyTheOthers(member.allReduce(step + 1, ReplicaGroup.NO_SAMPLES, 0))) {
            throw new IllegalStateException("the replica group ended while this device trains");
        }
    }

    /**
     * Applies the other replicas' update of a step this device had no sample for.
     *
     * @return false when there was none: training is over
     */
    private boolean applyTheOthers(float[] average) {
        if (average == null) {
            return false;
        }
        if (average.length == 0) {
            step++; // no replica had a sample: the step is counted and changes nothing
            return true;
        }
        try (NDManager scope = trainer.getManager().newSubManager()) {
            update(parameters.takeAverage(average, scope), scope);
        }
        return true;
    }

    @Override
    public void prepare() throws InterruptedException {
        initialize();
    }

    private void initialize() throws InterruptedException {
        if (ready) {
            return;
        }
        // On the thread that trains, before its first operator: libtorch sizes a thread's pool
        // when the thread first computes.
        TorchThreads.use(threads);
        if (!device.isGpu()) {
            try {
                ConvolutionCheck.requireOnCpu(settings.network().initShape().dimension() - 2);
            } catch (ConvolutionCheck.Wrong e) {
                throw new SuppressRestartsException(e); // every attempt would compute the same
            }
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
        state = trainer.getManager().newSubManager();
        parameters = new DeviceParameters(model, state, precision);
        sgd =
                new DeviceSgd(
                        state, settings.momentum(), settings.weightDecay(), settings.nesterov());
        if (pendingRestore != null) {
            decodeState(pendingRestore);
        }
        if (member != null) {
            // Replica 0's state, fresh or restored, is everyone's: replicas cannot diverge.
            byte[] initial =
                    member.initialState(member.replica() == 0 ? encodeState() : null, step);
            if (member.replica() != 0) {
                decodeState(initial);
            }
        }
        synchronized (published) {
            ready = true;
            pendingRestore = null;
        }
    }

    /** The next global step's update, on the device. */
    private void update(NDArray[] gradients, NDManager scope) {
        step++;
        // DJL's trackers take an int: the rate of the last step they count stays.
        int count = (int) Math.min(step, Integer.MAX_VALUE);
        parameters.update(sgd, gradients, learningRates.getNewValue(count), scope);
    }

    /**
     * Parameters, momentum and step, as of the last applied step. The writer calls this only at a
     * step boundary (or while the step waits in the all-reduce, before it touches anything).
     */
    @Override
    public byte[] snapshot() {
        byte[] unpublished = unpublished();
        return unpublished != null ? unpublished : encodeState();
    }

    /**
     * Copies the state on the device (on a GPU a device-to-device copy queued behind the last step)
     * and writes it to the host when asked, while the next steps run.
     */
    @Override
    public Capture capture() {
        byte[] unpublished = unpublished();
        if (unpublished != null) {
            return () -> unpublished;
        }
        return parameters.capture(settings.network().modelName(), step, this.state.newSubManager());
    }

    /** Until the model is ready: the state as restored, or none; null once it is ready. */
    private byte[] unpublished() {
        synchronized (published) {
            if (ready) {
                return null;
            }
            return pendingRestore != null ? pendingRestore : new byte[0];
        }
    }

    @Override
    public void restore(byte[] state) {
        if (state.length == 0) {
            return;
        }
        if (!ready) {
            pendingRestore = state; // applied when the model exists
        } else {
            decodeState(state);
        }
    }

    private byte[] encodeState() {
        return parameters.encode(settings.network().modelName(), step);
    }

    private void decodeState(byte[] encoded) {
        step = parameters.decode(encoded, settings.network().modelName());
    }

    /** Initialises the model now, as the first step would, and returns its state. */
    byte[] initializedState() throws InterruptedException {
        initialize();
        return encodeState();
    }

    /** The model's parameters (after the first step), for tests and checks. */
    ai.djl.nn.ParameterList parameters() {
        parameters.writeModel();
        return model.getBlock().getParameters();
    }

    /** The loss scale of mixed-precision steps (after the first step); absent in float32. */
    java.util.OptionalDouble lossScale() {
        return parameters.lossScale();
    }

    /**
     * Saves the trained model in DJL's format: {@code model-device-<d>/<name>-0000.params}, the
     * name the network's ({@code unet3d}, {@code cnn2d}). Replicas hold identical parameters, so
     * only the first device of a group saves.
     */
    @Override
    public void finish(Path outputDir, int device) throws IOException {
        if (model != null && (member == null || member.replica() == 0)) {
            if (parameters != null) {
                parameters.writeModel(); // in fp16 the masters are the parameters
            }
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
}
