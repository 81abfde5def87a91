package io.minato.job.generate;

import io.minato.workload.images.ImageSetGenerator;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code generate} command: writes a KiTS19-like dataset with {@link KitsLikeGenerator}, or
 * with {@code --workload images} an image classification set with {@link ImageSetGenerator}.
 */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description =
                "Writes a KiTS19-like dataset: case_NNNNN_x.npy (float32) and case_NNNNN_y.npy"
                        + " (uint8 labels), shape (1, D, H, W); or, with --workload images,"
                        + " class_NN/img_NNNNN.png|jpg images of widely varying size. Files of"
                        + " the same names are replaced; other files are left alone.")
public final class GenerateCommand implements Callable<Integer> {

    @Spec private CommandSpec spec;

    @Option(
            names = "--out",
            required = true,
            paramLabel = "DIR",
            description = "Folder to write into (created if missing).")
    private Path out;

    @Option(
            names = "--workload",
            paramLabel = "NAME",
            description = "kits19 (.npy volumes) or images (default: ${DEFAULT-VALUE}).")
    private Kind workload = Kind.kits19;

    /**
     * The synthetic sets this command writes, one per generator; a workload needs none to train on
     * a folder of its own.
     */
    private enum Kind {
        kits19,
        images
    }

    private Integer classes;

    @Option(
            names = "--classes",
            paramLabel = "C",
            description =
                    "Classes of --workload images, at least 2 (default: "
                            + ImageSetGenerator.DEFAULT_CLASSES
                            + ").")
    void setClasses(int classes) {
        if (classes < 2) {
            throw invalid("--classes must be at least 2, got " + classes);
        }
        this.classes = classes;
    }

    private boolean casesGiven;

    private int cases = KitsLikeGenerator.DEFAULT_CASES;
    private double scale = KitsLikeGenerator.DEFAULT_SCALE;
    private long seed = KitsLikeGenerator.DEFAULT_SEED;
    private int threads = Runtime.getRuntime().availableProcessors();

    @Option(
            names = "--cases",
            paramLabel = "N",
            defaultValue = "" + KitsLikeGenerator.DEFAULT_CASES,
            description =
                    "Number of cases, ids 0..N-1 (default: ${DEFAULT-VALUE}); for --workload"
                            + " images the number of images (default: "
                            + ImageSetGenerator.DEFAULT_IMAGES
                            + ").")
    void setCases(int cases) {
        if (cases < 1) {
            throw invalid("--cases must be at least 1, got " + cases);
        }
        this.cases = cases;
        this.casesGiven = true;
    }

    @Option(
            names = "--scale",
            paramLabel = "S",
            defaultValue = "" + KitsLikeGenerator.DEFAULT_SCALE,
            description =
                    "Multiplies every edge; 1 is full KiTS19 size (about 130 MB a case),"
                            + " in (0, 4] (default: ${DEFAULT-VALUE}).")
    void setScale(double scale) {
        if (!(scale > 0 && scale <= KitsLikeGenerator.MAX_SCALE)) {
            throw invalid(
                    "--scale must be in (0, " + KitsLikeGenerator.MAX_SCALE + "], got " + scale);
        }
        this.scale = scale;
    }

    @Option(
            names = "--seed",
            paramLabel = "K",
            defaultValue = "" + KitsLikeGenerator.DEFAULT_SEED,
            description = "Same seed, same bytes (default: ${DEFAULT-VALUE}).")
    void setSeed(long seed) {
        this.seed = seed;
    }

    @Option(
            names = "--threads",
            paramLabel = "T",
            description = "Cases generated at once (default: the number of cores).")
    void setThreads(int threads) {
        if (threads < 1) {
            throw invalid("--threads must be at least 1, got " + threads);
        }
        this.threads = threads;
    }

    @Override
    public Integer call() {
        if (workload == Kind.images) {
            return images();
        }
        if (classes != null) {
            throw invalid("--classes is for --workload images");
        }
        PrintWriter stdout = spec.commandLine().getOut();
        KitsLikeGenerator generator =
                KitsLikeGenerator.builder()
                        .optCases(cases)
                        .optScale(scale)
                        .optSeed(seed)
                        .optThreads(threads)
                        .build();
        AtomicInteger finished = new AtomicInteger();
        long start = System.nanoTime();
        List<KitsLikeGenerator.GeneratedCase> written;
        try {
            written =
                    generator.generate(
                            out,
                            c -> {
                                synchronized (stdout) {
                                    stdout.printf(
                                            Locale.ROOT,
                                            "case_%05d  1x%dx%dx%d  %.1f MB  (%d/%d)%n",
                                            c.id(),
                                            c.depth(),
                                            c.height(),
                                            c.width(),
                                            c.bytes() / 1e6,
                                            finished.incrementAndGet(),
                                            cases);
                                    stdout.flush();
                                }
                            });
        } catch (IOException e) {
            return cannotWrite("the dataset", e);
        }
        long bytes = written.stream().mapToLong(KitsLikeGenerator.GeneratedCase::bytes).sum();
        stdout.printf(
                Locale.ROOT,
                "generated %d cases (scale %s, seed %d) in %s: %.3f GB in %.1f s%n",
                written.size(),
                scale,
                seed,
                out,
                bytes / 1e9,
                (System.nanoTime() - start) / 1e9);
        stdout.flush();
        return 0;
    }

    private int images() {
        PrintWriter stdout = spec.commandLine().getOut();
        int images = casesGiven ? cases : ImageSetGenerator.DEFAULT_IMAGES;
        int c = classes != null ? classes : ImageSetGenerator.DEFAULT_CLASSES;
        if (c > images) {
            throw invalid(c + " classes need at least " + c + " images, not " + images);
        }
        long start = System.nanoTime();
        List<ImageSetGenerator.GeneratedImage> written;
        try {
            written =
                    ImageSetGenerator.builder()
                            .optImages(images)
                            .optClasses(c)
                            .optSeed(seed)
                            .build()
                            .generate(out);
        } catch (IOException e) {
            return cannotWrite("the images", e);
        }
        long bytes = written.stream().mapToLong(ImageSetGenerator.GeneratedImage::bytes).sum();
        stdout.printf(
                Locale.ROOT,
                "generated %d images of %d classes (seed %d) in %s: %.1f MB in %.1f s%n",
                written.size(),
                c,
                seed,
                out,
                bytes / 1e6,
                (System.nanoTime() - start) / 1e9);
        stdout.flush();
        return 0;
    }

    /** One line on stderr, exit status 1. */
    private int cannotWrite(String what, IOException e) {
        spec.commandLine()
                .getErr()
                .println(
                        "generate: cannot write "
                                + what
                                + " into "
                                + out
                                + ": "
                                + e.getClass().getSimpleName()
                                + ": "
                                + e.getMessage());
        return 1;
    }

    private ParameterException invalid(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
