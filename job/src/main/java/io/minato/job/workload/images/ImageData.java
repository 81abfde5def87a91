package io.minato.job.workload.images;

import ai.djl.Device;
import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.DataSplit;
import io.minato.job.workload.SampleList;
import io.minato.spi.Patch;
import io.minato.spi.Workload;
import io.minato.trainer.images.ClassifierEvaluation;
import io.minato.trainer.images.ImageClassifier;
import io.minato.workload.images.EncodedImage;
import io.minato.workload.images.ImageConfig;
import io.minato.workload.images.ImageFile;
import io.minato.workload.images.ImageFolder;
import io.minato.workload.images.ImageSetGenerator;
import io.minato.workload.images.ImageTransforms;
import io.minato.workload.kits19.Dataset;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * The images workload's side of a run: the folder scanned, every image's header checked (on all
 * cores), the held-out images split off, and the training images as a {@link Workload}.
 */
public final class ImageData {

    /** Where the demo set is generated when no --data is given. */
    static final Path DEMO_DIR = DataSpec.DEMO_DATA.resolve("images");

    /** The demo set: a few classes of generated images of widely varying size. */
    static final int DEMO_IMAGES = 240;

    static final int DEMO_CLASSES = 4;

    private ImageData() {}

    /** A run's images: those it trains on, those held out, and what was left out. */
    public record Images(
            Path dir,
            int total,
            int eval,
            ImageFolder train,
            List<ImageFile> held,
            List<RunReport.Quarantine> quarantine,
            ImageConfig config,
            Long memoBytes)
            implements DataSplit {

        /** The training images, their decoded pixels remembered as {@code --case-cache} says. */
        public Workload<EncodedImage> workload() {
            ImageTransforms transforms = new ImageTransforms(config);
            return new Workload<>(
                    ImagesWorkload.NAME,
                    train,
                    memoBytes == null ? transforms : transforms.withMemoBound(memoBytes));
        }

        /** Whether decoded images are remembered at all. */
        public boolean remembers() {
            return memoBytes == null || memoBytes > 0;
        }

        public int classes() {
            return train.classes().size();
        }
    }

    /** The images folder: --data, or the demo set, generated first if it is not there yet. */
    static Path dataDir(DataSpec data) throws IOException {
        if (!data.demo()) {
            return data.data();
        }
        Path dir = DEMO_DIR;
        if (!Files.isDirectory(dir)) {
            System.err.println("generating the images demo set under " + dir + "/ ...");
            ImageSetGenerator.builder()
                    .optImages(DEMO_IMAGES)
                    .optClasses(DEMO_CLASSES)
                    .optSeed(data.seed())
                    .build()
                    .generate(dir);
        }
        return dir;
    }

    /**
     * The images split into held-out and training ones, every image checked: a bad one stops the
     * run (fail) or is left out and counted (skip), with one line on {@code err}.
     */
    public static Images images(DataSpec data, PrintWriter err)
            throws IOException, BadInputException {
        Path dir = dataDir(data);
        ImageFolder all = ImageFolder.scan(dir);
        // A list names images of the folder, whether or not they pass their checks.
        Set<ImageFile> listed =
                data.cases() == null
                        ? null
                        : new HashSet<>(
                                SampleList.read(data.cases())
                                        .split(all.images(), ImageFile::name, "" + dir)
                                        .listed());
        BadInputException[] problems = new BadInputException[all.size()];
        IntStream.range(0, all.size())
                .parallel()
                .forEach(
                        i -> {
                            try {
                                all.check(i);
                            } catch (BadInputException e) {
                                problems[i] = e;
                            }
                        });
        List<ImageFile> good = new ArrayList<>();
        List<RunReport.Quarantine> quarantine = new ArrayList<>();
        for (BadInputException unnamable : all.unnamable()) {
            data.leaveOut(unnamable, dir, quarantine, err);
        }
        for (int i = 0; i < all.size(); i++) {
            if (problems[i] == null) {
                good.add(all.images().get(i));
                continue;
            }
            data.leaveOut(problems[i], dir, quarantine, err);
        }
        if (good.isEmpty()) {
            throw new BadInputException(dir, "every image was skipped as bad input");
        }
        ImageFolder.Split split;
        if (listed != null) {
            List<ImageFile> train = good.stream().filter(listed::contains).toList();
            if (train.isEmpty()) {
                throw new BadInputException(
                        data.cases(), "every listed image was skipped as bad input");
            }
            split =
                    new ImageFolder.Split(
                            ImageFolder.of(dir, all.classes(), train),
                            good.stream().filter(f -> !listed.contains(f)).toList());
        } else {
            split =
                    ImageFolder.of(dir, all.classes(), good)
                            .split(
                                    data.evalCases() != null
                                            ? data.evalCases()
                                            : Dataset.defaultEvalCases(good.size()));
        }
        int eval = split.eval().size();
        return new Images(
                dir,
                all.size() + all.unnamable().size(),
                eval,
                split.train(),
                split.eval(),
                List.copyOf(quarantine),
                ImageConfig.torchvision(data.patchEdge()),
                data.memoBytes());
    }

    /**
     * Top-1 accuracy of the model a run saved in {@code modelDir} over the held-out images, each
     * prepared by torchvision's evaluation transforms (resize, centre crop, normalise).
     */
    public static RunReport.Accuracy accuracy(
            Path modelDir,
            List<ImageFile> held,
            ImageConfig config,
            ImageClassifier network,
            Device device)
            throws IOException, BadInputException {
        List<Patch> prepared = new ArrayList<>(held.size());
        for (ImageFile f : held) {
            prepared.add(ImageTransforms.evaluation(ImageFolder.read(f), config));
        }
        double top1 = ClassifierEvaluation.accuracy(modelDir, network, prepared, device);
        return new RunReport.Accuracy(top1, prepared.size());
    }
}
