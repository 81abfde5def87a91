package io.minato.trainer.images;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.nn.ParameterList;
import ai.djl.training.ParameterStore;
import io.minato.data.BadInputException;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.ConvolutionCheck;
import io.minato.trainer.TorchThreads;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Top-1 accuracy of a saved {@link ImageClassifier} over prepared held-out images. */
public final class ClassifierEvaluation {
    /** Images per forward pass. */
    private static final int BATCH = 16;

    private ClassifierEvaluation() {}

    /**
     * The fraction of {@code images} whose class the model in {@code modelDir} (as a run's {@code
     * model-device-0}) puts first; NaN for no images. Images go through in batches of consecutive
     * images of one shape.
     *
     * @throws BadInputException no such model there, or one of another network, width or number of
     *     classes
     * @throws IllegalArgumentException an image the network cannot take
     * @throws IllegalStateException an image without a class index
     */
    public static double accuracy(
            Path modelDir, ImageClassifier network, Iterable<Patch> images, Device device)
            throws IOException, BadInputException {
        String name = network.modelName();
        if (!Files.isRegularFile(modelDir.resolve(name + "-0000.params"))) {
            throw new BadInputException(
                    modelDir, "no saved model " + name + "-0000.params in this folder");
        }
        long correct = 0;
        long total = 0;
        TorchThreads.useAllCores();
        if (!device.isGpu()) {
            ConvolutionCheck.requireOnCpu(2);
        }
        try (Model model = Model.newInstance(name, device);
                NDManager manager = NDManager.newBaseManager(device)) {
            model.setBlock(network.newBlock());
            try {
                model.load(modelDir, name);
            } catch (MalformedModelException | EngineException e) {
                throw new BadInputException(
                        modelDir,
                        "cannot use the model ("
                                + e.getMessage()
                                + "); was it trained with these classes and this --width?",
                        e);
            }
            checkShapes(modelDir, model.getBlock(), network, manager);
            ParameterStore parameters = new ParameterStore(manager, false);
            List<Patch> part = new ArrayList<>(BATCH);
            for (Patch image : images) {
                if (!part.isEmpty()
                        && (part.size() == BATCH || !image.shape().equals(part.get(0).shape()))) {
                    correct += correct(model.getBlock(), parameters, network, part, manager);
                    total += part.size();
                    part.clear();
                }
                part.add(image);
            }
            if (!part.isEmpty()) {
                correct += correct(model.getBlock(), parameters, network, part, manager);
                total += part.size();
            }
        }
        return total == 0 ? Double.NaN : (double) correct / total;
    }

    /**
     * DJL loads whatever arrays the file holds; a model of another width or class count would only
     * fail in the first forward pass, in libtorch's words. Compared here with a fresh block's.
     */
    private static void checkShapes(
            Path modelDir, Block loaded, ImageClassifier network, NDManager manager)
            throws BadInputException {
        Block fresh = network.newBlock();
        try (NDManager scope = manager.newSubManager()) {
            fresh.initialize(scope, DataType.FLOAT32, network.initShape());
            ParameterList expected = fresh.getParameters();
            ParameterList saved = loaded.getParameters();
            for (int i = 0; i < expected.size(); i++) {
                var want = expected.get(i).getValue().getArray().getShape();
                var have =
                        i < saved.size() && saved.get(i).getValue().isInitialized()
                                ? saved.get(i).getValue().getArray().getShape()
                                : null;
                if (!want.equals(have)) {
                    throw new BadInputException(
                            modelDir,
                            "the saved model's "
                                    + expected.get(i).getKey()
                                    + " is "
                                    + have
                                    + " where this classifier's is "
                                    + want
                                    + "; was it trained with these classes and this --width?");
                }
            }
        }
    }

    /** How many of {@code part}'s images (one shape) the model classifies right. */
    private static int correct(
            Block block,
            ParameterStore parameters,
            ImageClassifier network,
            List<Patch> part,
            NDManager manager) {
        try (NDManager scope = manager.newSubManager()) {
            Shape3 shape = part.get(0).shape();
            int voxels = Math.toIntExact(shape.voxels());
            float[] values = new float[Math.multiplyExact(voxels, part.size())];
            for (int i = 0; i < part.size(); i++) {
                System.arraycopy(part.get(i).image(), 0, values, i * voxels, voxels);
            }
            NDArray x = scope.create(values, network.inputShape(part.size(), shape));
            NDArray logits = block.forward(parameters, new NDList(x), false).singletonOrThrow();
            long[] predicted = logits.argMax(1).toLongArray();
            int correct = 0;
            for (int i = 0; i < part.size(); i++) {
                correct += predicted[i] == part.get(i).classIndex() ? 1 : 0;
            }
            return correct;
        }
    }
}
