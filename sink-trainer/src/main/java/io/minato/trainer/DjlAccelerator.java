package io.minato.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
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
import java.nio.file.Path;

/**
 * Real training on one device: the MLPerf 3D-UNet in DJL (PyTorch engine), Dice + cross-entropy,
 * SGD with momentum and a linear learning-rate warm-up.
 *
 * <p>The parameters ride in Flink checkpoints through {@link #snapshot()}; the optimizer's momentum
 * does not yet (it restarts from zero after a restore). Replicas are not synchronised: the job runs
 * real training on one device only until synchronous data parallelism exists.
 */
public final class DjlAccelerator implements Accelerator {
    public static final String KIND = "cpu";
    public static final String MODEL_NAME = "unet3d";

    /** Model width and SGD settings (the train command holds the defaults). */
    public record Settings(
            double width, float learningRate, float momentum, int warmupSteps, long seed)
            implements Serializable {}

    /** Creates the trainer of one device. */
    public record Factory(Settings settings) implements AcceleratorFactory {
        @Override
        public Accelerator create(int device, int devices) {
            return new DjlAccelerator(settings);
        }
    }

    private final Settings settings;
    private Model model;
    private Trainer trainer;
    private byte[] pendingRestore;

    public DjlAccelerator(Settings settings) {
        this.settings = settings;
    }

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public StepResult train(Batch batch) {
        long start = System.nanoTime();
        Shape shape = shapeOf(batch);
        initialize(shape);
        float loss;
        try (NDManager scope = trainer.getManager().newSubManager()) {
            NDArray x = scope.create(images(batch), shape);
            NDArray y = scope.create(labels(batch), shape);
            try (GradientCollector gc = trainer.newGradientCollector()) {
                NDList prediction = trainer.forward(new NDList(x));
                NDArray l = trainer.getLoss().evaluate(new NDList(y), prediction);
                gc.backward(l);
                loss = l.getFloat();
            }
            trainer.step();
        }
        return new StepResult(loss, System.nanoTime() - start);
    }

    private void initialize(Shape shape) {
        if (trainer != null) {
            return;
        }
        // The same seed on every replica: identical initial parameters.
        Engine.getInstance().setRandomSeed((int) settings.seed());
        model = Model.newInstance(MODEL_NAME, Device.cpu());
        model.setBlock(Unet3d.builder().optWidth(settings.width()).build());
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(DiceCeLoss.builder().build())
                        .optOptimizer(
                                Optimizer.sgd()
                                        .setLearningRateTracker(
                                                Tracker.warmUp()
                                                        .setMainTracker(
                                                                Tracker.fixed(
                                                                        settings.learningRate()))
                                                        .optWarmUpSteps(settings.warmupSteps())
                                                        .build())
                                        .optMomentum(settings.momentum())
                                        .build())
                        .optDevices(new Device[] {Device.cpu()});
        trainer = model.newTrainer(config);
        trainer.initialize(shape);
        if (pendingRestore != null) {
            apply(pendingRestore);
            pendingRestore = null;
        }
    }

    @Override
    public byte[] snapshot() {
        if (trainer == null) {
            return pendingRestore != null ? pendingRestore : new byte[0];
        }
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            var parameters = model.getBlock().getParameters();
            out.writeInt(parameters.size());
            for (Pair<String, Parameter> p : parameters) {
                out.writeUTF(p.getKey());
                byte[] encoded = p.getValue().getArray().encode();
                out.writeInt(encoded.length);
                out.write(encoded);
            }
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void restore(byte[] state) {
        if (state.length == 0) {
            return;
        }
        if (trainer == null) {
            pendingRestore = state; // parameters exist only once the first batch fixed the shape
        } else {
            apply(state);
        }
    }

    private void apply(byte[] state) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(state))) {
            var parameters = model.getBlock().getParameters();
            int n = in.readInt();
            if (n != parameters.size()) {
                throw new IllegalStateException(
                        "checkpoint has " + n + " parameters, the model " + parameters.size());
            }
            for (Pair<String, Parameter> p : parameters) {
                String name = in.readUTF();
                byte[] encoded = new byte[in.readInt()];
                in.readFully(encoded);
                if (!name.equals(p.getKey())) {
                    throw new IllegalStateException(
                            "checkpoint parameter " + name + " where the model has " + p.getKey());
                }
                try (NDArray saved = NDArray.decode(trainer.getManager(), encoded)) {
                    p.getValue().getArray().set(saved.toFloatArray());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The model's parameters (after the first step), for tests and checks. */
    ai.djl.nn.ParameterList parameters() {
        return model.getBlock().getParameters();
    }

    /** Saves the trained model in DJL's format: {@code model-device-<d>/unet3d-0000.params}. */
    @Override
    public void finish(Path outputDir, int device) throws IOException {
        if (model != null) {
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
