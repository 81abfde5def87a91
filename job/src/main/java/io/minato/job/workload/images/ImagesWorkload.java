package io.minato.job.workload.images;

import ai.djl.Device;
import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.JobWorkload;
import io.minato.job.workload.TrainingSet;
import io.minato.trainer.images.ImageClassifier;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** 2D classification of a class/image folder: torchvision's transforms, a small CNN, top-1. */
public final class ImagesWorkload implements JobWorkload {

    public static final String NAME = "images";

    /** torchvision's ImageNet training crop. */
    public static final int DEFAULT_SIZE = 224;

    /** The demo's crop: small, so that a CPU trains on it in seconds. */
    public static final int DEMO_SIZE = 64;

    /**
     * At batch 2, 0.005 and above made the classifier's loss jump and its ReLUs die on the demo
     * set; 0.002 brought the loss near 0 in three epochs.
     */
    public static final float LEARNING_RATE = 0.002f;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int defaultEdge() {
        return DEFAULT_SIZE;
    }

    @Override
    public int demoEdge() {
        return DEMO_SIZE;
    }

    @Override
    public String edgeLine(int edge) {
        return "crop " + edge + "^2";
    }

    @Override
    public void check(DataSpec data) {
        if (data.tail() != null) {
            throw new IllegalArgumentException(
                    "--tail is the kits19 bench knob; the images workload's tail is its own"
                            + " (decoding grows with the image)");
        }
        if (data.patchEdge() < ImageClassifier.MIN_SIZE) {
            throw new IllegalArgumentException(
                    "--patch "
                            + data.patchEdge()
                            + " is below the classifier's "
                            + ImageClassifier.MIN_SIZE
                            + " pixels");
        }
    }

    @Override
    public List<String> networks() {
        return Arrays.stream(ImageClassifier.Architecture.values())
                .map(ImageClassifier.Architecture::modelName)
                .toList();
    }

    @Override
    public float defaultLearningRate() {
        return LEARNING_RATE;
    }

    @Override
    public TrainingSet open(DataSpec data, PrintWriter err) throws IOException, BadInputException {
        return new ImageSet(ImageData.images(data, err));
    }

    @Override
    public Optional<String> refusesEvaluate() {
        return Optional.empty();
    }

    /**
     * Top-1 accuracy; the network is the one whose saved parameters the folder holds, looked for
     * before the images are read.
     */
    @Override
    public String evaluate(Path model, double width, DataSpec data, Device device, PrintWriter err)
            throws IOException, BadInputException {
        List<String> files = networks().stream().map(n -> n + "-0000.params").toList();
        int saved = 0;
        while (saved < files.size() && !Files.isRegularFile(model.resolve(files.get(saved)))) {
            saved++;
        }
        if (saved == files.size()) {
            throw new BadInputException(
                    model,
                    "no saved image classifier in this folder ("
                            + String.join(" or ", files)
                            + ")");
        }
        String network = networks().get(saved);
        ImageData.Images images = ImageData.images(data, err);
        if (images.held().isEmpty()) {
            throw new IllegalArgumentException("no held-out images: give --eval-cases N (N >= 1)");
        }
        RunReport.Accuracy accuracy =
                ImageData.accuracy(
                        model,
                        images.held(),
                        images.config(),
                        new ImageClassifier(
                                images.classes(),
                                width,
                                ImageClassifier.Architecture.named(network)),
                        device);
        return String.format(
                Locale.ROOT,
                "top-1 accuracy %.3f (%s) on %d held-out image(s) of %s",
                accuracy.top1(),
                network,
                accuracy.images(),
                images.dir());
    }
}
