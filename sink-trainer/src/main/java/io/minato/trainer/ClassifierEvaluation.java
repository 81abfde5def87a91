package io.minato.trainer;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import io.minato.data.BadInputException;
import io.minato.transform.Patch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Top-1 accuracy of a saved {@link ImageClassifier} over prepared held-out images. */
public final class ClassifierEvaluation {
    /** Images per forward pass. */
    private static final int BATCH = 16;

    private ClassifierEvaluation() {}

    /**
     * The fraction of {@code images} whose class the model in {@code modelDir} (as a run's {@code
     * model-device-0}) puts first; NaN for no images.
     *
     * @throws BadInputException no such model there, or one of another network
     */
    public static double accuracy(
            Path modelDir, ImageClassifier network, List<Patch> images, Device device)
            throws IOException, BadInputException {
        String name = network.modelName();
        if (!Files.isRegularFile(modelDir.resolve(name + "-0000.params"))) {
            throw new BadInputException(
                    modelDir, "no saved model " + name + "-0000.params in this folder");
        }
        if (images.isEmpty()) {
            return Double.NaN;
        }
        int correct = 0;
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
            ParameterStore parameters = new ParameterStore(manager, false);
            for (int from = 0; from < images.size(); from += BATCH) {
                List<Patch> part = images.subList(from, Math.min(images.size(), from + BATCH));
                try (NDManager scope = manager.newSubManager()) {
                    var shape = part.get(0).shape();
                    float[] values = new float[Math.toIntExact(shape.voxels() * part.size())];
                    for (int i = 0; i < part.size(); i++) {
                        if (!part.get(i).shape().equals(shape)) {
                            throw new IllegalArgumentException("held-out images of mixed shapes");
                        }
                        System.arraycopy(
                                part.get(i).image(),
                                0,
                                values,
                                (int) (i * shape.voxels()),
                                (int) shape.voxels());
                    }
                    NDArray x = scope.create(values, network.inputShape(part.size(), shape));
                    NDArray logits =
                            model.getBlock()
                                    .forward(parameters, new NDList(x), false)
                                    .singletonOrThrow();
                    long[] predicted = logits.argMax(1).toLongArray();
                    for (int i = 0; i < part.size(); i++) {
                        correct += predicted[i] == part.get(i).classIndex() ? 1 : 0;
                    }
                }
            }
        }
        return (double) correct / images.size();
    }
}
