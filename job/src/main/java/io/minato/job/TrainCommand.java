package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.job.dataflow.LoaderJob;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.SampleList;
import io.minato.job.workload.TrainingSet;
import io.minato.loader.TimeoutPolicy;
import io.minato.trainer.TrainerSink;
import io.minato.trainer.gpu.DeviceRequest;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * Runs the loader as a Flink job into the trainer sink and reports how busy the devices were: the
 * options, checked into a {@link RunPlan}, the data they name ({@link TrainingSet}), the job on
 * Flink ({@link TrainingRun}) and its report ({@link TrainingReport}).
 */
@Command(
        name = "train",
        mixinStandardHelpOptions = true,
        description = "Train: run the loader as a Flink job feeding the trainers; print a summary.")
public final class TrainCommand implements Callable<Integer> {

    @Mixin DataOptions data = new DataOptions();

    @Mixin ModelOptions model = new ModelOptions();

    @Mixin OptimizerOptions optimizer = new OptimizerOptions();

    @Option(
            names = "--network",
            paramLabel = "NAME",
            description =
                    "The network to train: unet3d for kits19; cnn2d (the default) or resnet18"
                            + " (torchvision's ResNet-18 layout) for images.")
    String network;

    static final int DEFAULT_EPOCHS = 2;

    /** {@code --epochs}; null: the default, the demo's on the demo set. */
    Integer epochs;

    @Option(
            names = "--epochs",
            paramLabel = "E",
            description =
                    "Passes over the training cases (default: "
                            + DEFAULT_EPOCHS
                            + "; on the demo set, with no --data,"
                            + " the demo's "
                            + DemoSchedule.EPOCHS
                            + ", with the learning rate x "
                            + DemoSchedule.DECAY_FACTOR
                            + " after step "
                            + DemoSchedule.DECAY_STEP
                            + " unless --lr-decay-steps or --lr-decay-factor say otherwise).")
    void setEpochs(int value) {
        requireAtLeast("--epochs", value, 1);
        epochs = value;
    }

    @Mixin BatchOptions batch = new BatchOptions();

    @Option(
            names = "--devices",
            paramLabel = "SPEC",
            description =
                    "cpu, cpu:N (N trainer replicas on the CPU), gpu (all), gpus:N (N GPUs), gpu:0,1,... (default:"
                            + " gpu if present, else cpu).",
            converter = DevicesConverter.class)
    DeviceRequest devices = DeviceRequest.parse(null);

    @Option(
            names = "--loader",
            paramLabel = "NAME",
            description =
                    "minato, inorder (PyTorch DataLoader semantics: fixed batches, in order) or djl (DJL's own dataset loader: DataIterable on the workers, in order). Default: ${DEFAULT-VALUE}.")
    LoaderJob.Loader loader = LoaderJob.Loader.minato;

    @Option(
            names = "--workers",
            paramLabel = "auto|W",
            description =
                    "CPU preprocessing workers: Minato's fast workers; the in-order baseline gets"
                            + " W + S, the same thread count. auto: as many as cores, paced by"
                            + " the worker scheduler, which sets how many prepare at once from the"
                            + " devices' queues and the CPU the trainers leave; a number: that"
                            + " many, each preparing whenever it has work (default: auto).",
            converter = WorkersConverter.class)
    Workers workers = Workers.AUTO;

    @Option(
            names = "--slow-workers",
            paramLabel = "S",
            description =
                    "Minato's slow-path workers, besides the W fast ones (default: W; idle ones"
                            + " cost nothing, and a heavy tail needs the cores the fast workers"
                            + " leave).")
    Integer slowWorkers;

    @Option(
            names = "--timeout",
            paramLabel = "auto|MS",
            description = "The fast/slow deadline (default: auto).",
            converter = TimeoutConverter.class)
    TimeoutPolicy timeout = TimeoutPolicy.parse("auto");

    @Option(
            names = "--accelerator",
            paramLabel = "real|simulated:MS|serve[:PORT]",
            description =
                    "Real DJL training; a step that sleeps MS ms and uses no CPU; or serve each"
                            + " device's batches to rank r of a PyTorch training script (the"
                            + " python/ package), device r on PORT + r (no PORT: any free port,"
                            + " written to RUN_DIR/serving/rank-r.json). Default: ${DEFAULT-VALUE}.",
            converter = AcceleratorConverter.class)
    AcceleratorChoice accelerator = new AcceleratorChoice.Real();

    @Option(
            names = "--serve-bind",
            paramLabel = "ADDR",
            description =
                    "With --accelerator serve: the address the devices listen on (default:"
                            + " ${DEFAULT-VALUE}, this host only; another needs"
                            + " --serve-token-file).")
    String serveBind = "127.0.0.1";

    @Option(
            names = "--serve-token-file",
            paramLabel = "FILE",
            description =
                    "With --accelerator serve: a file whose first line is the token a training"
                            + " process must present; processes without it are refused.")
    Path serveTokenFile;

    @Option(
            names = "--queue-depth",
            paramLabel = "Q",
            description = "Batches queued in front of each device (default: ${DEFAULT-VALUE}).")
    int queueDepth = TrainerSink.DEFAULT_QUEUE_DEPTH;

    @Option(names = "--report", paramLabel = "FILE", description = "Write the report JSON here.")
    Path report;

    @Option(
            names = "--trace",
            paramLabel = "FILE",
            description = "Write the delivery trace CSV here.")
    Path trace;

    @Option(
            names = "--run-dir",
            paramLabel = "DIR",
            description =
                    "Where the run keeps checkpoints, device traces and summaries (default: runs/<time>).")
    Path runDir;

    @Option(
            names = "--checkpoint-interval",
            paramLabel = "MS",
            description =
                    "Checkpoint interval in milliseconds; a checkpoint pending three intervals (at"
                            + " least 10 s) fails and the next is taken, and three failed in a row"
                            + " fail the job over to its last checkpoint (default:"
                            + " ${DEFAULT-VALUE}).")
    long checkpointMillis = 2000;

    @Option(
            names = "--restart-attempts",
            paramLabel = "N",
            description =
                    "Failures since the last completed checkpoint the job recovers from"
                            + " (restarting after 0.1 s, doubling to 2 s): a job that checkpoints"
                            + " between failures goes on however often they come, while N + 1"
                            + " without a checkpoint between them stop it; 0: none (default:"
                            + " ${DEFAULT-VALUE}).")
    int restartAttempts = TrainerSink.DEFAULT_RESTARTS_WITHOUT_CHECKPOINT;

    @Option(
            names = "--web-ui",
            negatable = true,
            // Both default and fallback true: picocli then reads --no-web-ui as false (without
            // them it read the negated form as true, and left the web UI on).
            defaultValue = "true",
            fallbackValue = "true",
            description = "Serve the Flink web UI on the embedded run (default: on).")
    boolean webUi = true;

    @Option(
            names = "--plots",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "Draw the run's usage.png and prep-times.png into its run directory at its end"
                            + " (a fraction of a second at the end; default: on).")
    boolean plots = true;

    @Option(
            names = "--rest-port",
            paramLabel = "PORT",
            description =
                    "Port of the embedded web UI; 0 picks a free one, shown on the start line"
                            + " (default: ${DEFAULT-VALUE}).")
    int restPort = 8081;

    @Option(
            names = "--metrics-port",
            paramLabel = "PORT",
            description =
                    "Serve the run's metrics (Flink's and the loader's) for Prometheus on"
                            + " http://localhost:PORT/metrics; 0 picks a free port, shown on the"
                            + " start line (default: none).")
    Integer metricsPort;

    @Option(
            names = "--resume",
            paramLabel = "RUN_DIR",
            description =
                    "Continue the run in RUN_DIR (killed, failed or stopped) from its latest complete"
                            + " checkpoint, with the options it was started with. Beside it only"
                            + " options that do not change what is trained may be given anew"
                            + " (--report, --trace, --[no-]web-ui, --[no-]plots, --rest-port,"
                            + " --metrics-port,"
                            + " --timeout,"
                            + " --queue-depth, --checkpoint-interval, the case cache's); any other"
                            + " must repeat the run's value.")
    Path resume;

    @Option(
            names = "--progress-interval",
            paramLabel = "MS",
            description =
                    "A progress line this often while training on the embedded cluster, redrawn in"
                            + " place (at least every second) on a terminal; 0: none (default:"
                            + " ${DEFAULT-VALUE}).")
    long progressMillis = 5000;

    @Option(
            names = "--exit-with-stdin",
            description =
                    "End the run when standard input reaches its end: a launching process (the"
                            + " Python package) passes a pipe it never writes to, which closes"
                            + " when that process ends, however it ends. The job is then"
                            + " cancelled, its latest checkpoint kept for --resume.")
    boolean exitWithStdin;

    @Option(
            names = "--log-events",
            paramLabel = "FILE",
            description =
                    "Write the run's log messages (its warnings and errors, Flink's included, and"
                            + " minato's progress) to FILE as they happen, one JSON object a line,"
                            + " in place of the console's log lines; for a launching process to"
                            + " read.")
    void setLogEvents(Path file) {
        logEvents = file;
        RunLog.events(file);
    }

    /** {@code --log-events}. */
    Path logEvents;

    /** A resumed run's checkpoint: the job starts from it. */
    Path restoreFrom;

    @Spec CommandSpec spec;

    private void requireAtLeast(String option, long value, long least) {
        if (value < least) {
            throw new ParameterException(
                    spec.commandLine(), option + " must be >= " + least + ", not " + value);
        }
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        if (resume != null) {
            return resumed(err);
        }
        // Before the set-up, which takes seconds: a launcher gone by then ends it.
        Lifeline lifeline = exitWithStdin ? Lifeline.watch(System.in) : null;
        RunPlan.Options options = options();
        RunPlan plan;
        try {
            plan = RunPlan.of(options, err);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        DataSpec samples = options.data();
        if (DemoSchedule.appliesTo(samples) && restoreFrom == null) {
            err.println(DemoSchedule.notice(options.epochs(), plan.optimizer));
        }
        TrainingSet set;
        try {
            set =
                    samples.workload()
                            .open(samples.forWorkers(plan.fastWorkers + plan.slowWorkers), err);
        } catch (IllegalArgumentException e) {
            // A --dataset that does not load: the option's problem, in its one line.
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        Path run = plan.runDir;
        try {
            OutputPaths.createRunDir(run);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        RunArgs.write(run, spec.commandLine().getParseResult().expandedArgs());
        RunArgs.identify(run, restoreFrom == null);
        RunLog.into(run);
        return new TrainingRun(plan, set, lifeline).execute(spec.commandLine().getOut(), err);
    }

    /**
     * What the options ask for, typed: on the demo set (no {@code --data}) the demo's schedule
     * where {@code --epochs}, {@code --lr-decay-steps} and {@code --lr-decay-factor} are not given.
     */
    RunPlan.Options options() {
        // The counts' ranges, each in one line naming its option; the typed values checked
        // themselves where picocli converted them.
        if (slowWorkers != null) {
            requireAtLeast("--slow-workers", slowWorkers, 1);
        }
        requireAtLeast("--queue-depth", queueDepth, 1);
        requireAtLeast("--checkpoint-interval", checkpointMillis, 10);
        requireAtLeast("--restart-attempts", restartAttempts, 0);
        requireAtLeast("--progress-interval", progressMillis, 0);
        if (metricsPort != null && (metricsPort < 0 || metricsPort > 65535)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--metrics-port must be a port (0-65535), not " + metricsPort);
        }
        List<String> networks = data.workload.networks();
        if (network != null && !networks.contains(network)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--network "
                            + network
                            + ": --workload "
                            + data.workload.name()
                            + " trains "
                            + String.join(" or ", networks));
        }
        DataSpec samples = data.spec();
        boolean demo = DemoSchedule.appliesTo(samples);
        return new RunPlan.Options(
                samples,
                loader,
                epochs != null ? epochs : demo ? DemoSchedule.EPOCHS : DEFAULT_EPOCHS,
                batch.batch(),
                model.width(),
                network != null ? network : networks.get(0),
                (lr, seed) ->
                        demo
                                ? optimizer.settings(
                                        model.width(),
                                        lr,
                                        seed,
                                        List.of(DemoSchedule.DECAY_STEP),
                                        DemoSchedule.DECAY_FACTOR)
                                : optimizer.settings(model.width(), lr, seed),
                devices,
                workers,
                slowWorkers,
                timeout,
                accelerator,
                serveBind,
                serveTokenFile,
                queueDepth,
                report,
                trace,
                runDir,
                Duration.ofMillis(checkpointMillis),
                restartAttempts,
                webUi,
                plots,
                restPort,
                metricsPort,
                progressMillis,
                restoreFrom);
    }

    /**
     * {@code --resume RUN_DIR}: the run's stored options, those given now that may change (last
     * wins), the run directory itself, and its latest complete checkpoint to start from.
     */
    private Integer resumed(PrintWriter err) throws Exception {
        List<String> stored;
        Path checkpoint;
        try {
            stored = RunArgs.read(resume);
            checkpoint = RunArgs.latestCheckpoint(resume);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        ParseResult given = spec.commandLine().getParseResult();
        for (OptionSpec o : given.matchedOptions()) {
            List<String> names = List.of(o.names());
            if (names.contains("--run-dir")) {
                throw new ParameterException(
                        spec.commandLine(),
                        "--resume continues the run in its own folder: leave out --run-dir");
            }
            if (!Collections.disjoint(names, RunArgs.HOW)) {
                continue;
            }
            String mine = String.join(" ", o.originalStringValues());
            boolean flag = o.arity().max() == 0;
            Optional<String> theirs =
                    flag
                            ? stored.stream().anyMatch(names::contains)
                                    ? Optional.of(mine)
                                    : Optional.empty()
                            : RunArgs.valueOf(stored, Set.copyOf(names));
            if (theirs.isEmpty() || !sameValue(o, mine, theirs.get())) {
                throw new ParameterException(
                        spec.commandLine(),
                        "--resume "
                                + resume
                                + ": "
                                + o.longestName()
                                + (flag ? "" : " " + mine)
                                + " would change what the run trains (it was started "
                                + theirs.map(v -> "with " + o.longestName() + (flag ? "" : " " + v))
                                        .orElse("without " + o.longestName())
                                + "); leave it out");
            }
        }
        List<String> args = new ArrayList<>(stored);
        List<String> now = given.expandedArgs();
        for (int i = 0; i < now.size(); i++) {
            if (now.get(i).equals("--resume")) {
                i++;
            } else if (!now.get(i).startsWith("--resume=")) {
                args.add(now.get(i));
            }
        }
        args.add("--run-dir");
        args.add(resume.toString());
        err.println("resuming " + resume + " from " + checkpoint);
        return again(args, checkpoint);
    }

    /** Train as with {@code args} on this command line, from {@code checkpoint} if not null. */
    private Integer again(List<String> args, Path checkpoint) throws Exception {
        CommandLine again = new CommandLine(new TrainCommand());
        again.setOverwrittenOptionsAllowed(true);
        again.setOut(spec.commandLine().getOut());
        again.setErr(spec.commandLine().getErr());
        again.parseArgs(args.toArray(String[]::new));
        TrainCommand run = again.getCommand();
        run.restoreFrom = checkpoint;
        return run.call();
    }

    /**
     * An option's value parsed by a typed value's own {@code parse}, whose one-line refusal (an
     * {@link IllegalArgumentException}) picocli reports as the option's.
     */
    abstract static class Parsed<T> implements ITypeConverter<T> {
        private final Function<String, T> parse;

        Parsed(Function<String, T> parse) {
            this.parse = parse;
        }

        @Override
        public T convert(String value) {
            try {
                return parse.apply(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class WorkersConverter extends Parsed<Workers> {
        WorkersConverter() {
            super(Workers::parse);
        }
    }

    /** {@code --devices}, parsed here only ({@code evaluate} takes it too). */
    static final class DevicesConverter extends Parsed<DeviceRequest> {
        DevicesConverter() {
            super(DeviceRequest::parse);
        }
    }

    static final class TimeoutConverter extends Parsed<TimeoutPolicy> {
        TimeoutConverter() {
            super(TimeoutPolicy::parse);
        }
    }

    static final class AcceleratorConverter extends Parsed<AcceleratorChoice> {
        AcceleratorConverter() {
            super(AcceleratorChoice::parse);
        }
    }

    /** Paths compare as absolute paths (the run stores them so), anything else as text. */
    private boolean sameValue(OptionSpec o, String mine, String theirs) {
        if (List.of(o.names()).contains("--cases")) {
            // The run keeps its own copy of the list: the same names, from any file, are the same.
            return listed(Path.of(mine)).equals(listed(Path.of(theirs)));
        }
        if (o.type() == Path.class) {
            return Path.of(mine).toAbsolutePath().normalize().equals(Path.of(theirs));
        }
        return mine.equals(theirs);
    }

    private Set<String> listed(Path file) {
        try {
            return SampleList.read(file).lines().keySet();
        } catch (BadInputException e) {
            throw new ParameterException(
                    spec.commandLine(), "--resume " + resume + ": " + e.getMessage());
        }
    }
}
