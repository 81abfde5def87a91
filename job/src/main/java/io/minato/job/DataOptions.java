package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.data.CaseCheck;
import io.minato.data.CaseFiles;
import io.minato.data.Dataset;
import io.minato.job.generate.KitsLikeGenerator;
import io.minato.transform.TransformConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options that change what a sample is: shared by train and profile so that the names and
 * defaults are the contract's, in one place.
 */
public final class DataOptions {
    public static final long DEFAULT_SEED = 7;

    /** Where the demo dataset is generated when no --data is given. */
    public static final Path DEMO_DATA = Path.of("data");

    /** The demo's patch: its volumes (scale 0.25) are at least 32 voxels on every axis. */
    public static final int DEMO_PATCH = 32;

    @Option(
            names = "--data",
            paramLabel = "DIR",
            description =
                    "Folder of case_*_x.npy / case_*_y.npy pairs (default: a small KiTS19-like"
                            + " demo set, generated under data/ on first use).")
    public Path data;

    @Option(
            names = "--patch",
            paramLabel = "P",
            description =
                    "Edge of the cubic training patch in voxels (default: 128; 32 on the demo set).")
    public Integer patch;

    @Option(
            names = "--seed",
            paramLabel = "K",
            description = "Run seed (default: ${DEFAULT-VALUE}).")
    public long seed = DEFAULT_SEED;

    @Option(
            names = "--eval-cases",
            paramLabel = "N",
            description =
                    "Cases held out for evaluation (default: a fifth of the cases, as MLPerf).")
    public Integer evalCases;

    @Option(
            names = "--on-bad-sample",
            paramLabel = "fail|skip",
            description =
                    "A case that fails its checks stops the run before training (fail), or is left"
                            + " out and counted as quarantined (skip). Default: ${DEFAULT-VALUE}.")
    public OnBadSample onBadSample = OnBadSample.fail;

    /** What to do with a case that fails its checks. */
    public enum OnBadSample {
        fail,
        skip
    }

    /** Whether the run uses the generated demo set. */
    public boolean demo() {
        return data == null;
    }

    /** The data folder: --data, or the demo set, generated first if it is not there yet. */
    public Path dataDir() throws IOException {
        if (!demo()) {
            return data;
        }
        if (!Files.exists(DEMO_DATA.resolve("case_00000_x.npy"))) {
            System.err.println("generating the demo dataset under " + DEMO_DATA + "/ ...");
            KitsLikeGenerator.builder().build().generate(DEMO_DATA);
        }
        return DEMO_DATA;
    }

    public int patchEdge() {
        return patch != null ? patch : demo() ? DEMO_PATCH : TransformConfig.DEFAULT_PATCH;
    }

    public TransformConfig transformConfig() {
        return TransformConfig.mlperf(patchEdge());
    }

    /**
     * The dataset split into held-out and training cases, every training case checked: a bad one
     * stops the run (fail) or is left out and counted (skip), with one line on {@code err}.
     */
    public Cases cases(PrintWriter err) throws IOException, BadInputException {
        Path dir = dataDir();
        Dataset dataset = Dataset.scan(dir);
        int eval = evalCases != null ? evalCases : Dataset.defaultEvalCases(dataset.size());
        Dataset.Split split = dataset.split(eval);
        List<CaseFiles> train = new ArrayList<>();
        List<CaseFiles> held = new ArrayList<>();
        int quarantined = 0;
        for (CaseFiles c : dataset.cases()) {
            boolean training = split.train().contains(c);
            try {
                // Held-out cases may be any size: sliding-window inference pads them.
                CaseCheck.check(c, training ? transformConfig().patch() : null);
                (training ? train : held).add(c);
            } catch (BadInputException e) {
                if (onBadSample == OnBadSample.fail) {
                    throw e;
                }
                quarantined++;
                err.println("skipped: " + e.getMessage());
            }
        }
        if (train.isEmpty()) {
            throw new BadInputException(dir, "every training case was skipped as bad input");
        }
        return new Cases(
                dir, dataset.size(), eval, List.copyOf(train), List.copyOf(held), quarantined);
    }

    /** The cases a run trains on. */
    public record Cases(
            Path dir,
            int total,
            int eval,
            List<CaseFiles> train,
            List<CaseFiles> held,
            int quarantined) {}
}
