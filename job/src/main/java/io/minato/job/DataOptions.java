package io.minato.job;

import io.minato.job.dataflow.LoaderJob;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.JobWorkload;
import io.minato.job.workload.Workloads;
import io.minato.workload.kits19.CaseCache;
import java.nio.file.Path;
import java.util.Iterator;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * The options that change what a sample is: shared by train and profile so that the names and
 * defaults are the contract's, in one place.
 */
public final class DataOptions {
    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    public static final long DEFAULT_SEED = LoaderJob.DEFAULT_SEED;

    @Option(
            names = "--workload",
            paramLabel = "NAME",
            defaultValue = Workloads.DEFAULT,
            converter = WorkloadConverter.class,
            completionCandidates = WorkloadNames.class,
            description =
                    "What the run trains: one of ${COMPLETION-CANDIDATES} (default:"
                            + " ${DEFAULT-VALUE}); --data says what each reads, docs/workloads.md"
                            + " what each trains.")
    public JobWorkload workload = Workloads.named(Workloads.DEFAULT);

    @Option(
            names = "--data",
            paramLabel = "DIR",
            description =
                    "Folder of case_*_x.npy / case_*_y.npy pairs, or for --workload images a"
                            + " folder of class folders of images (default: a small generated demo"
                            + " set under data/, made on first use).")
    public Path data;

    @Option(
            names = "--dataset",
            paramLabel = "MODULE:CALLABLE",
            description =
                    "For --workload python: the map-style PyTorch Dataset, made by CALLABLE() in"
                            + " MODULE on every TaskManager that prepares (or a .pkl file the"
                            + " Python package's launch(dataset=...) wrote).")
    public String dataset;

    @Option(
            names = "--python",
            paramLabel = "PYTHON",
            description =
                    "For --workload python: the interpreter of the job's Python workers; it must"
                            + " import minato_flink and the dataset (default: ${DEFAULT-VALUE}).")
    public String python = "python3";

    @Option(
            names = "--patch",
            paramLabel = "P",
            description =
                    "Edge of the cubic training patch in voxels (default: 128; 32 on the demo set);"
                            + " for --workload images the edge of the square crop (default: 224;"
                            + " 64 on the demo set).")
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
            names = "--cases",
            paramLabel = "FILE",
            description =
                    "The training set as a list, one name a line (kits19: case_00002; images: a"
                            + " path under --data, class_01/x.jpg; # starts a comment); the"
                            + " folder's others are held out for evaluation, in place of"
                            + " --eval-cases.")
    public Path cases;

    @Option(
            names = "--on-bad-sample",
            paramLabel = "fail|skip",
            description =
                    "A case that fails its checks stops the run before training (fail), or is left"
                            + " out and counted as quarantined (skip); under skip a sample that"
                            + " goes bad while the run prepares it (a file truncated or replaced,"
                            + " an image that does not decode) is quarantined for the rest of the"
                            + " run (every loader). Default: ${DEFAULT-VALUE}.")
    public OnBadSample onBadSample = OnBadSample.fail;

    @Option(
            names = "--case-cache",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "Remember what depends on a sample's files alone, so it is computed once, not"
                            + " every epoch (and run): kits19's start-up check and the foreground"
                            + " components of the crop, in memory and on disk; the images'"
                            + " decoded pixels, in memory up to --cache-memory. The samples are"
                            + " the same bytes either way (default: on).")
    public boolean caseCache = true;

    @Option(
            names = "--cache-memory",
            paramLabel = "MB",
            description =
                    "At most this many MiB of remembered decoded images per JVM (images workload;"
                            + " a run keeps what fits and decodes the rest every epoch; default: a"
                            + " quarter of the heap).")
    void setCacheMemoryMb(long value) {
        if (value < 0) {
            throw new ParameterException(
                    spec.commandLine(), "--cache-memory must be >= 0, not " + value);
        }
        cacheMemoryMb = value;
    }

    /** {@code --cache-memory}; null: the default. */
    public Long cacheMemoryMb;

    @Option(
            names = "--cache-dir",
            paramLabel = "DIR",
            description =
                    "Where remembered per-case results are kept (default: "
                            + CaseCache.DEFAULT_DIR_NAME
                            + " inside the data folder).")
    public Path cacheDir;

    @Option(
            names = "--tail",
            paramLabel = "P,K",
            converter = TailConverter.class,
            description =
                    "Benchmark knob, not an MLPerf transform: a deterministic fraction P of samples"
                            + " costs about K times a typical sample's CPU (K - 1 extra passes of"
                            + " noise generation over the patch, thrown away: the bytes do not"
                            + " change), e.g. 0.05,50 for the reference's heavy tail"
                            + " (default: off).")
    public RunReport.Tail tail;

    /** Parses {@code P,K}: P in [0, 1], K a whole number >= 1. */
    static final class TailConverter implements ITypeConverter<RunReport.Tail> {
        @Override
        public RunReport.Tail convert(String value) {
            String[] parts = value.split(",");
            try {
                if (parts.length == 2) {
                    double p = Double.parseDouble(parts[0].strip());
                    int k = Integer.parseInt(parts[1].strip());
                    if (p >= 0 && p <= 1 && k >= 1) {
                        return new RunReport.Tail(p, k);
                    }
                }
            } catch (NumberFormatException e) {
                // the message below says what is expected
            }
            throw new TypeConversionException(
                    "'"
                            + value
                            + "' is not P,K with P a fraction in [0, 1] and K a whole number >= 1"
                            + " (e.g. 0.05,50)");
        }
    }

    /** Parses {@code --workload}. */
    static final class WorkloadConverter extends TrainCommand.Parsed<JobWorkload> {
        WorkloadConverter() {
            super(Workloads::named);
        }
    }

    /** {@code --workload}'s values, for {@code --help} and shell completion. */
    static final class WorkloadNames implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return Workloads.names().iterator();
        }
    }

    /** What to do with a case that fails its checks. */
    public enum OnBadSample {
        fail,
        skip
    }

    public int patchEdge() {
        if (patch != null) {
            return patch;
        }
        return data == null ? workload.demoEdge() : workload.defaultEdge();
    }

    /** What these options say the samples are. */
    public DataSpec spec() {
        if (cases != null && evalCases != null) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--cases lists the training set and holds out the folder's others: leave out"
                            + " --eval-cases");
        }
        return new DataSpec(
                workload,
                data,
                patchEdge(),
                seed,
                evalCases,
                cases,
                onBadSample == OnBadSample.skip,
                caseCache,
                cacheDir,
                cacheMemoryMb,
                tail,
                dataset == null
                        ? null
                        : new DataSpec.Python(dataset, python, DataSpec.Python.DEFAULT_PROCESSES));
    }
}
