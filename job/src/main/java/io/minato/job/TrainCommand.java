package io.minato.job;

import ai.djl.engine.Engine;
import io.minato.job.report.RunPlots;
import io.minato.job.report.RunReport;
import io.minato.job.report.RunSampler;
import io.minato.loader.AccumulatorFiles;
import io.minato.loader.AugmentOperator;
import io.minato.loader.CacheMetrics;
import io.minato.loader.PrepTimes;
import io.minato.loader.Receivers;
import io.minato.loader.SampleRecipe;
import io.minato.loader.SampleSource;
import io.minato.loader.TaskManagerUsage;
import io.minato.loader.TimeoutPolicy;
import io.minato.spi.Workload;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.ImageClassifier;
import io.minato.trainer.Savepoints;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainerSink;
import io.minato.trainer.TrainingProgress;
import io.minato.trainer.Unet3dNetwork;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.gpu.TrainingDevice;
import io.minato.trainer.unet.Unet3d;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

/** Runs the loader as a Flink job into the trainer sink and reports how busy the devices were. */
@Command(
        name = "train",
        mixinStandardHelpOptions = true,
        description = "Train: run the loader as a Flink job feeding the trainers; print a summary.")
public final class TrainCommand implements Callable<Integer> {

    /** 0.125 cannot tell tumour from kidney on the synthetic data; 0.25 can. */
    static final double DEFAULT_WIDTH = 0.25;

    @Mixin DataOptions data = new DataOptions();

    @Option(
            names = "--epochs",
            paramLabel = "E",
            description = "Passes over the training cases (default: ${DEFAULT-VALUE}).")
    int epochs = 2;

    @Option(
            names = "--batch",
            paramLabel = "B",
            description = "Samples per batch per device (default: ${DEFAULT-VALUE}).")
    int batch = 2;

    @Option(
            names = "--devices",
            paramLabel = "SPEC",
            description =
                    "cpu, cpu:N (N trainer replicas on the CPU), gpu, gpu:0,1,... (default: gpu if present, else cpu).")
    String devices;

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
                            + " many, each preparing whenever it has work (default: auto).")
    String workers = "auto";

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
            description = "The fast/slow deadline (default: ${DEFAULT-VALUE}).")
    String timeout = "auto";

    @Option(
            names = "--accelerator",
            paramLabel = "real|simulated:MS",
            description =
                    "Real DJL training, or a step that sleeps MS ms and uses no CPU (default: ${DEFAULT-VALUE}).")
    String accelerator = "real";

    @Option(
            names = "--width",
            paramLabel = "X",
            description =
                    "Model width: for the 3D-UNet 1.0 is MLPerf's 32-64-128-256-320 filters; for"
                            + " the image classifier 1.0 is 16-32-64 (default: ${DEFAULT-VALUE}).")
    double width = DEFAULT_WIDTH;

    @Option(
            names = "--learning-rate",
            paramLabel = "LR",
            description =
                    "SGD learning rate, reached after the warm-up (default: 0.1; 0.002 for"
                            + " --workload images, whose small CNN has no normalisation layers).")
    Float learningRate;

    /** The 3D-UNet's rate (the kits19 default). */
    static final float UNET_LEARNING_RATE = 0.1f;

    /**
     * The image classifier's: at batch 2, 0.005 and above made its loss jump and its ReLUs die on
     * the demo set; 0.002 brought the loss near 0 in three epochs.
     */
    static final float CLASSIFIER_LEARNING_RATE = 0.002f;

    @Option(
            names = "--momentum",
            paramLabel = "M",
            description = "SGD momentum (default: ${DEFAULT-VALUE}).")
    float momentum = 0.9f;

    @Option(
            names = "--weight-decay",
            paramLabel = "WD",
            description = "L2 weight decay, as PyTorch's SGD (default: ${DEFAULT-VALUE}).")
    float weightDecay = 0f;

    @Option(names = "--nesterov", description = "Nesterov momentum (default: off).")
    boolean nesterov;

    @Option(
            names = "--warmup-steps",
            paramLabel = "N",
            description =
                    "Global steps of linear learning-rate warm-up from 0 (default: ${DEFAULT-VALUE}).")
    int warmupSteps = 20;

    @Option(
            names = "--warmup-start-lr",
            paramLabel = "LR",
            description = "Learning rate the warm-up starts from (default: ${DEFAULT-VALUE}).")
    float warmupStartLr = 0f;

    @Option(
            names = "--lr-decay-steps",
            split = ",",
            paramLabel = "S",
            description =
                    "Global steps after which the learning rate is multiplied by --lr-decay-factor"
                            + " (default: none).")
    List<Long> lrDecaySteps = new ArrayList<>();

    @Option(
            names = "--lr-decay-factor",
            paramLabel = "F",
            description = "Learning-rate factor at each decay step (default: ${DEFAULT-VALUE}).")
    float lrDecayFactor = 1f;

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
            description = "Checkpoint interval in milliseconds (default: ${DEFAULT-VALUE}).")
    long checkpointMillis = 2000;

    @Option(
            names = "--restart-attempts",
            paramLabel = "N",
            description =
                    "Failures in a row the job recovers from (restarting after 0.5 s, doubling to"
                            + " 10 s); a minute without one starts the count again, so failures far"
                            + " apart never stop a long run; 0: none (default: ${DEFAULT-VALUE}).")
    int restartAttempts = 3;

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

    private static final Duration SAMPLE_PERIOD = Duration.ofMillis(250);

    @Option(
            names = "--progress-interval",
            paramLabel = "MS",
            description =
                    "A progress line this often while training on the embedded cluster, redrawn in"
                            + " place (at least every second) on a terminal; 0: none (default:"
                            + " ${DEFAULT-VALUE}).")
    long progressMillis = 5000;

    /** A resumed run's checkpoint: the job starts from it. */
    private Path restoreFrom;

    @Spec CommandSpec spec;

    private void requireAtLeast(String option, long value, long least) {
        if (value < least) {
            throw new ParameterException(
                    spec.commandLine(), option + " must be >= " + least + ", not " + value);
        }
    }

    private int parseWorkers(String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new ParameterException(
                    spec.commandLine(), "--workers must be auto or a number, not '" + value + "'");
        }
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (resume != null) {
            return resumed(err);
        }
        requireAtLeast("--epochs", epochs, 1);
        requireAtLeast("--batch", batch, 1);
        boolean scheduled = workers.equalsIgnoreCase("auto");
        int fast = scheduled ? Runtime.getRuntime().availableProcessors() : parseWorkers(workers);
        requireAtLeast("--workers", fast, 1);
        if (slowWorkers != null) {
            requireAtLeast("--slow-workers", slowWorkers, 1);
        }
        requireAtLeast("--queue-depth", queueDepth, 1);
        requireAtLeast("--checkpoint-interval", checkpointMillis, 10);
        requireAtLeast("--restart-attempts", restartAttempts, 0);
        requireAtLeast("--progress-interval", progressMillis, 0);
        if (data.cacheMemoryMb != null) {
            requireAtLeast("--cache-memory", data.cacheMemoryMb, 0);
        }
        // The training runs in this process (not under flink run): web UI, memory, progress.
        boolean embedded = FlinkSetup.embedded();
        DeviceSpec dev;
        OptionalInt clusterSlots;
        TimeoutPolicy timeoutPolicy;
        AcceleratorFactory acceleratorFactory;
        DjlAccelerator.Settings optimizer = null;
        try {
            // Submitted to a cluster whose TaskManagers get GPUs from Flink: the trainers take
            // theirs there; this machine's GPUs (a client's) do not matter.
            dev = DeviceSpec.parseForCluster(devices, embedded ? 0 : FlinkSetup.flinkGpus());
            dev.fallbackNotice().ifPresent(err::println);
            // In application mode main() runs in the JobManager, before TaskManagers register.
            clusterSlots =
                    embedded || FlinkSetup.applicationMode()
                            ? OptionalInt.empty()
                            : ClusterSlots.total(FlinkSetup.clientConfiguration());
            if (dev.fromFlink() && !embedded && !FlinkSetup.applicationMode()) {
                // Each training slot requires a GPU: without enough, Flink would wait for slots
                // that never come.
                OptionalInt gpus = ClusterSlots.mostGpus(FlinkSetup.clientConfiguration());
                if (gpus.isPresent() && gpus.getAsInt() < dev.devices().size()) {
                    throw new IllegalArgumentException(
                            ClusterSlots.tooFewGpus(dev.devices().size(), gpus.getAsInt()));
                }
            }
            if (scheduled && clusterSlots.isPresent()) {
                // On a cluster: a worker for every slot the trainers leave, on whichever
                // TaskManagers hold them (this client's cores say nothing about them).
                fast =
                        ClusterSlots.preparationWorkers(
                                clusterSlots.getAsInt(), dev.devices().size());
            }
            timeoutPolicy = TimeoutPolicy.parse(timeout);
            if (data.images() && data.tail != null) {
                throw new IllegalArgumentException(
                        "--tail is the kits19 bench knob; the images workload's tail is its own"
                                + " (decoding grows with the image)");
            }
            if (data.images() && data.patchEdge() < ImageClassifier.MIN_SIZE) {
                throw new IllegalArgumentException(
                        "--patch "
                                + data.patchEdge()
                                + " is below the classifier's "
                                + ImageClassifier.MIN_SIZE
                                + " pixels");
            }
            if (accelerator.equals("real")) {
                if (!dev.fromFlink()) {
                    dev = withTorchDevices(dev, err);
                }
                if (!data.images() && data.patchEdge() % Unet3d.PATCH_DIVISOR != 0) {
                    throw new IllegalArgumentException(
                            "--patch "
                                    + data.patchEdge()
                                    + " must be a multiple of "
                                    + Unet3d.PATCH_DIVISOR
                                    + " for the 3D-UNet");
                }
                optimizer =
                        new DjlAccelerator.Settings(
                                width,
                                learningRate != null
                                        ? learningRate
                                        : data.images()
                                                ? CLASSIFIER_LEARNING_RATE
                                                : UNET_LEARNING_RATE,
                                momentum,
                                weightDecay,
                                nesterov,
                                warmupSteps,
                                data.seed,
                                warmupStartLr,
                                lrDecaySteps,
                                lrDecayFactor);
                // Made once the data says which network it trains (a classifier's classes).
                acceleratorFactory = null;
            } else {
                acceleratorFactory = SimulatedAccelerator.parse(accelerator);
            }
            if (webUi && embedded) {
                // Before anything is read or written; 0: a free port, which the start line shows.
                restPort = restPort == 0 ? FlinkSetup.freePort() : restPort;
                FlinkSetup.requireFree(restPort);
            }
            if (metricsPort != null) {
                if (!embedded) {
                    throw new IllegalArgumentException(
                            "--metrics-port serves the embedded run's metrics; a cluster reports"
                                    + " through the metrics.reporter.* keys of its config.yaml"
                                    + " (see flink-conf/config.yaml)");
                }
                if (metricsPort < 0 || metricsPort > 65535) {
                    throw new IllegalArgumentException(
                            "--metrics-port must be a port (0-65535), not " + metricsPort);
                }
                metricsPort = metricsPort == 0 ? FlinkSetup.freePort() : metricsPort;
                FlinkSetup.requireFree(
                        metricsPort,
                        "port "
                                + metricsPort
                                + " on localhost is taken: give --metrics-port N for another"
                                + " port, or 0 for a free one");
            }
            // Before any sample: a report or trace that cannot be written is lost after the run.
            if (report != null) {
                OutputPaths.requireWritableFile("--report", report);
            }
            if (trace != null) {
                OutputPaths.requireWritableFile("--trace", trace);
            }
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }

        TrainingSet set =
                data.images()
                        ? TrainingSet.of(ImageData.images(data, err))
                        : TrainingSet.of(data.cases(err), data);
        if (optimizer != null) {
            optimizer =
                    optimizer.withNetwork(
                            set.images() != null
                                    ? new ImageClassifier(set.images().classes(), width)
                                    : new Unet3dNetwork(width));
            acceleratorFactory = new DjlAccelerator.Factory(optimizer, dev.names());
        }

        Path run =
                runDir != null
                        ? runDir
                        : Path.of(
                                "runs",
                                LocalDateTime.now()
                                        .format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        try {
            OutputPaths.createRunDir(run);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        RunArgs.write(run, spec.commandLine().getParseResult().expandedArgs());
        RunLog.into(run);
        Workload<?> workload = set.workload();
        boolean minato = loader == LoaderJob.Loader.minato;
        int slow = slowWorkers != null ? slowWorkers : fast;
        RunReport.Inputs template =
                new RunReport.Inputs(
                        data.workload.name(),
                        loader.name(),
                        dev.devices().size(),
                        batch,
                        data.patchEdge(),
                        epochs,
                        data.seed,
                        set.total(),
                        set.train(),
                        set.eval(),
                        set.quarantine(),
                        Long.MAX_VALUE,
                        0,
                        Runtime.getRuntime().availableProcessors(),
                        Double.NaN,
                        null,
                        null,
                        null,
                        optimizer,
                        null,
                        data.tail,
                        null,
                        new RunReport.Workers(
                                minato ? fast : fast + slow,
                                minato ? slow : 0,
                                minato && scheduled,
                                null),
                        null,
                        null,
                        0);
        // `flink run -d`: no client waits for the job's accumulators, so the operators write them
        // into the run directory, and the job writes its own report (DetachedReport).
        // Application mode runs this in the JobManager, detached unless configured otherwise:
        // the job writes its report, and the JobManager must not be exited under it.
        if (!embedded && FlinkSetup.applicationMode()) {
            Main.runsInsideJobManager();
        }
        boolean detached = !embedded && FlinkSetup.detached();
        TrainerSink.Builder sinkBuilder =
                TrainerSink.builder()
                        .setAccelerator(acceleratorFactory)
                        .optQueueDepth(queueDepth)
                        .optOutputDir(run.toAbsolutePath())
                        .optTraceDir(run.toAbsolutePath())
                        .optRecipe(new SampleRecipe(workload))
                        .optSkipBadSamples(data.onBadSample == DataOptions.OnBadSample.skip);
        if (detached) {
            sinkBuilder.optOnRunEnd(
                    new DetachedReport(
                            template,
                            report,
                            trace,
                            minato,
                            timeoutPolicy,
                            set.remembers(),
                            plots,
                            set.dir()));
        }
        TrainerSink sink = sinkBuilder.build();
        LoaderJob.Builder jobBuilder =
                LoaderJob.builder()
                        .setWorkload(workload)
                        .setTrainer(sink)
                        .optLoader(loader)
                        .optEpochs(epochs)
                        .optSeed(data.seed)
                        .optBatchSize(batch)
                        .optDevices(dev.devices().size())
                        .optTimeout(timeoutPolicy)
                        .optSkipBadSamples(data.onBadSample == DataOptions.OnBadSample.skip)
                        // On a cluster preparation may run on other hosts than training, and
                        // training where Flink's GPUs are when the cluster declares them.
                        .optTrainingSlots(
                                embedded
                                        ? LoaderJob.TrainingSlots.SHARED
                                        : dev.fromFlink()
                                                ? LoaderJob.TrainingSlots.ON_GPUS
                                                : LoaderJob.TrainingSlots.APART);
        LoaderJob loaderJob =
                (scheduled
                                ? jobBuilder.optScheduledWorkers(fast, slow)
                                : jobBuilder.optWorkers(fast, slow))
                        .build();
        int slots = loaderJob.slots();
        if (clusterSlots.isPresent() && clusterSlots.getAsInt() < slots) {
            // Flink would wait for slots that never come, then fail minutes later.
            throw new ParameterException(
                    spec.commandLine(),
                    ClusterSlots.tooFew(clusterSlots.getAsInt(), slots, dev.devices().size()));
        }
        Path flinkTmp = Files.createDirectories(run.resolve("tmp"));
        Configuration job =
                FlinkSetup.jobConfiguration(
                        run, Duration.ofMillis(checkpointMillis), restartAttempts);
        if (restoreFrom != null) {
            job.setString("execution.state-recovery.path", restoreFrom.toAbsolutePath().toString());
        }
        StreamExecutionEnvironment env =
                FlinkSetup.environment(
                        job,
                        slots,
                        loaderJob.networkBuffers(),
                        webUi,
                        restPort,
                        metricsPort,
                        flinkTmp);
        if (detached) {
            Configuration parameters = new Configuration();
            parameters.setString(
                    AccumulatorFiles.DIR_PARAMETER,
                    run.resolve(DetachedReport.ACCUMULATORS).toAbsolutePath().toString());
            env.getConfig().setGlobalJobParameters(parameters);
        }
        loaderJob.build(env);

        err.printf(
                Locale.ROOT,
                "training: %s loader, %s, %d %s (%d held out, %d quarantined) x %d epochs, %s %d%s,"
                        + " batch %d x %d %s device(s), accelerator %s, %s workers, run dir %s%s%s%n",
                loader,
                data.workload,
                set.train(),
                set.unit(),
                set.held(),
                set.quarantine().size(),
                epochs,
                data.images() ? "crop" : "patch",
                data.patchEdge(),
                data.images() ? "^2" : "^3",
                batch,
                dev.devices().size(),
                dev.devices().get(0).kind().name().toLowerCase(Locale.ROOT),
                accelerator,
                scheduled ? "auto (" + fast + " + " + slow + ")" : Integer.toString(fast),
                run,
                webUi ? ", web UI on http://localhost:" + restPort : "",
                metricsPort != null
                        ? ", metrics on http://localhost:" + metricsPort + "/metrics"
                        : "");
        err.flush();
        String name = "minato-flink train (" + loader + ")";
        if (detached) {
            JobClient client = env.executeAsync(name);
            err.println(
                    "submitted job "
                            + client.getJobID()
                            + " detached: when it finishes it writes report.json, the trace and"
                            + " summary.txt into "
                            + run.toAbsolutePath()
                            + (report != null ? " (and the report to " + report + ")" : "")
                            + "; follow it in the web UI or with flink list");
            err.flush();
            return 0;
        }
        long cpu0 = RunSampler.cpuNanos();
        long start = System.currentTimeMillis();
        // The run's trainers register with it; read by the sampler and the progress line.
        TrainingProgress progress = TrainingProgress.of(run.toAbsolutePath());
        RunSampler sampler =
                embedded
                        ? RunSampler.start(SAMPLE_PERIOD, () -> progress.totals().busyNanos())
                        : null;
        List<RunSampler.Sample> samples = null;
        JobExecutionResult result;
        OutputPaths.FullDiskWatch disk = OutputPaths.FullDiskWatch.start(run, 200);
        try {
            if (progressMillis <= 0) {
                result = env.execute(name);
            } else {
                JobClient client = env.executeAsync(name);
                // Embedded, the trainers run in this JVM; on a cluster, their metrics come
                // through the JobManager's REST API.
                ClusterProgress cluster =
                        embedded
                                ? null
                                : new ClusterProgress(
                                        FlinkSetup.clientConfiguration(),
                                        client.getJobID().toString());
                result =
                        withProgress(
                                client,
                                embedded ? progress::totals : cluster::totals,
                                (long) set.train() * epochs,
                                set.train(),
                                dev.devices().size(),
                                err);
            }
        } catch (Exception e) {
            RuntimeException stopped = Failure.of(e).inRun(run, embedded, disk.sawNearlyFull());
            if (stopped != null) {
                throw stopped;
            }
            throw e;
        } finally {
            disk.close();
            samples = sampler == null ? null : sampler.stop();
            TrainingProgress.forget(run.toAbsolutePath());
            FlinkSetup.deleteRpcJars(flinkTmp);
        }
        long processCpu = RunSampler.cpuNanos() - cpu0;
        String savepoint = Savepoints.stoppedWith(run);
        if (savepoint != null) {
            // flink stop: the job ended as finished, with samples left to train.
            err.println(
                    "stopped with a savepoint in "
                            + savepoint
                            + "; continue the run with --resume "
                            + run.toAbsolutePath());
            err.flush();
            return 0;
        }
        RunArgs.finished(run);
        Map<String, Object> accumulators = result.getAllAccumulatorResults();
        Long firstRequest = firstRequest(accumulators);
        boolean requested = firstRequest != null;

        Evaluation.Dice dice = null;
        RunReport.Accuracy accuracy = null;
        if (acceleratorFactory instanceof DjlAccelerator.Factory factory && set.held() > 0) {
            err.println(
                    "evaluating the trained model on "
                            + set.held()
                            + (set.images() != null
                                    ? " held-out image(s) ..."
                                    : " held-out case(s) ..."));
            err.flush();
            if (set.images() != null) {
                accuracy =
                        ImageData.accuracy(
                                run.resolve("model-device-0"),
                                set.images(),
                                (ImageClassifier) optimizer.network(),
                                factory.device(0));
            } else {
                dice =
                        Evaluation.evaluate(
                                run.resolve("model-device-0"),
                                width,
                                data.patchEdge(),
                                set.cases().held(),
                                factory.device(0),
                                Evaluation.CaseDone.printingTo(err));
            }
        }
        RunReport r =
                RunReport.build(
                        withJob(
                                template,
                                set.dir(),
                                accumulators,
                                minato,
                                timeoutPolicy,
                                set.remembers(),
                                requested ? firstRequest : start,
                                requested ? ManagementFactory.getRuntimeMXBean().getStartTime() : 0,
                                processCpu / 1e9,
                                dice,
                                accuracy,
                                samples),
                        run);
        // Inputs quarantined while the run prepared them: one line each, as before the run.
        List<RunReport.Quarantine> left = r.inputs().quarantine();
        for (RunReport.Quarantine q : left.subList(set.quarantine().size(), left.size())) {
            err.println("skipped: " + set.dir().resolve(q.file()) + ": " + q.reason());
        }
        if (report != null) {
            r.write(report);
        }
        if (trace != null) {
            TraceFiles.merge(run, trace);
        }
        if (plots) {
            writePlots(run, samples, dev.devices().size(), err);
        }
        out.println(r.summaryLine());
        out.flush();
        return 0;
    }

    /**
     * The run's own plots into its folder ({@link RunPlots}): usage over time where this process
     * sampled it (the embedded cluster), preparation times always. A plot that cannot be drawn
     * costs a warning line, never the run.
     */
    private static void writePlots(
            Path run, List<RunSampler.Sample> samples, int devices, PrintWriter err) {
        try {
            List<Path> written =
                    RunPlots.write(
                            run,
                            samples == null ? List.of() : samples,
                            devices,
                            Runtime.getRuntime().availableProcessors(),
                            TraceFiles.prepMillisByPath(run));
            if (!written.isEmpty()) {
                err.println(
                        "plots: "
                                + written.stream()
                                        .map(Path::toString)
                                        .collect(Collectors.joining(", ")));
            }
        } catch (IOException | RuntimeException e) {
            err.println("warning: no plots of this run: " + e.getMessage());
        }
        err.flush();
    }

    /**
     * The report's inputs: what the submitting client knows ({@code template}) with what the job's
     * accumulators say (first request, final timeout, case cache lookups, the scheduler's mean) and
     * what the process that waited for the job measured.
     *
     * @param firstRequestFallback the first request's time when the source recorded none
     * @param processStart the waiting process's start (0: none; the report's start_s is then null)
     * @param cpuSeconds its CPU time (NaN: not measured)
     */
    static RunReport.Inputs withJob(
            RunReport.Inputs template,
            Path dataDir,
            Map<String, Object> accumulators,
            boolean minato,
            TimeoutPolicy policy,
            boolean cacheEnabled,
            long firstRequestFallback,
            long processStart,
            double cpuSeconds,
            Evaluation.Dice dice,
            RunReport.Accuracy accuracy,
            List<RunSampler.Sample> memory) {
        RunReport.Inputs t = template;
        Long first = firstRequest(accumulators);
        RunReport.Workers w = t.workers();
        return new RunReport.Inputs(
                t.workload(),
                t.loader(),
                t.devices(),
                t.batch(),
                t.patch(),
                t.epochs(),
                t.seed(),
                t.cases(),
                t.trainCases(),
                t.evalCases(),
                quarantine(t.quarantine(), dataDir, accumulators),
                first != null ? first : firstRequestFallback,
                processStart,
                t.cores(),
                cpuSeconds,
                timeoutMillis(accumulators, minato, policy),
                dice,
                accuracy,
                t.optimizer(),
                cacheCounts(accumulators, cacheEnabled),
                t.tail(),
                memory,
                new RunReport.Workers(
                        w.fast(),
                        w.slow(),
                        w.auto(),
                        w.auto() ? activeWorkersMean(accumulators) : null,
                        accumulators.get(Receivers.SENT_AS_BYTES) instanceof Long n ? n : null),
                fetch(accumulators),
                taskManagers(accumulators),
                accumulators.get(AugmentOperator.SAMPLES_SKIPPED) instanceof Long n ? n : 0);
    }

    /** Each TaskManager's part of the job ({@link TaskManagerUsage}); null when none said. */
    static List<RunReport.TaskManager> taskManagers(Map<String, Object> accumulators) {
        if (!(accumulators.get(TaskManagerUsage.NAME) instanceof Map<?, ?> byId)) {
            return null;
        }
        List<RunReport.TaskManager> all = new ArrayList<>();
        byId.forEach(
                (id, value) -> {
                    TaskManagerUsage.Usage u = (TaskManagerUsage.Usage) value;
                    all.add(
                            new RunReport.TaskManager(
                                    String.valueOf(id),
                                    u.workers(),
                                    u.trainers(),
                                    u.cpuNanos() / 1e9,
                                    u.peakRssBytes() < 0 ? null : u.peakRssBytes(),
                                    Double.isNaN(u.activeMean()) ? null : u.activeMean()));
                });
        return all;
    }

    /**
     * Samples left out so far because their source was quarantined, which the progress line's total
     * does not count; 0 while the job cannot say (restarting, ending).
     */
    private static long skippedSoFar(JobClient job) {
        try {
            return job.getAccumulators()
                                    .get(1, TimeUnit.SECONDS)
                                    .get(AugmentOperator.SAMPLES_SKIPPED)
                            instanceof Long n
                    ? n
                    : 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            return 0;
        }
    }

    /**
     * What the run left out: the inputs quarantined before it started, then those its workers
     * quarantined while it ran (each once, however many workers met it), in file order.
     */
    static List<RunReport.Quarantine> quarantine(
            List<RunReport.Quarantine> before, Path dataDir, Map<String, Object> accumulators) {
        if (!(accumulators.get(AugmentOperator.QUARANTINED) instanceof List<?> during)
                || during.isEmpty()) {
            return before;
        }
        java.util.TreeMap<String, RunReport.Quarantine> byFile = new java.util.TreeMap<>();
        for (Object entry : during) {
            String[] fileAndReason = String.valueOf(entry).split("\0", 2);
            RunReport.Quarantine q =
                    RunReport.Quarantine.of(
                            dataDir,
                            Path.of(fileAndReason[0]),
                            fileAndReason.length > 1 ? fileAndReason[1] : "");
            byFile.putIfAbsent(q.file(), q);
        }
        List<RunReport.Quarantine> all = new ArrayList<>(before);
        all.addAll(byFile.values());
        return all;
    }

    /** The loaders' time in reads of samples' files; null when no loader reported it. */
    static RunReport.Fetch fetch(Map<String, Object> accumulators) {
        Object wall = accumulators.get(PrepTimes.FETCH_NANOS);
        Object cpu = accumulators.get(PrepTimes.FETCH_CPU_NANOS);
        return wall instanceof Long w && cpu instanceof Long c
                ? new RunReport.Fetch(w / 1e9, c / 1e9)
                : null;
    }

    /** The fast workers' mean of the scheduler's active count; null when none reported it. */
    static Double activeWorkersMean(Map<String, Object> accumulators) {
        Object mean = accumulators.get(AugmentOperator.ACTIVE_WORKERS_MEAN);
        return mean instanceof Double d && !d.isNaN() ? d : null;
    }

    /** When the source handed out its first sample; null when it did not. */
    static Long firstRequest(Map<String, Object> accumulators) {
        Object first = accumulators.get(SampleSource.FIRST_REQUEST_MILLIS);
        return first instanceof Long l && l != Long.MAX_VALUE ? l : null;
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
        CommandLine again = new CommandLine(new TrainCommand());
        again.setOverwrittenOptionsAllowed(true);
        again.setOut(spec.commandLine().getOut());
        again.setErr(err);
        again.parseArgs(args.toArray(String[]::new));
        TrainCommand resumedRun = again.getCommand();
        resumedRun.restoreFrom = checkpoint;
        err.println("resuming " + resume + " from " + checkpoint);
        return resumedRun.call();
    }

    /**
     * Waits for the job, printing what the trainers have done every {@code --progress-interval}:
     * epoch, samples of the run, samples per second and accelerator busy time over the last
     * interval, slow samples so far, and when the run should end at that pace.
     */
    private JobExecutionResult withProgress(
            JobClient job,
            Supplier<TrainingProgress.Totals> progress,
            long all,
            int cases,
            int devices,
            PrintWriter err)
            throws Exception {
        boolean terminal = System.console() != null;
        long interval = terminal ? Math.min(progressMillis, 1000) : progressMillis;
        CompletableFuture<JobExecutionResult> done = job.getJobExecutionResult();
        long lastNanos = System.nanoTime();
        TrainingProgress.Totals last = progress.get();
        boolean drawn = false;
        try {
            while (true) {
                try {
                    return done.get(interval, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    long now = System.nanoTime();
                    TrainingProgress.Totals t = progress.get();
                    if (t.samples() == 0) {
                        continue; // starting up
                    }
                    if (last.samples() == 0 && restoreFrom != null) {
                        // A resumed run's devices come back with the samples trained before:
                        // the pace counts from here.
                        last = t;
                        lastNanos = now;
                        continue;
                    }
                    double seconds = (now - lastNanos) / 1e9;
                    double rate = (t.samples() - last.samples()) / seconds;
                    long total = all - skippedSoFar(job);
                    // A step counts as busy when it ends, all of it: one that began in the
                    // last interval would push this one's share past 100 %.
                    double busy =
                            Math.min(
                                    1.0,
                                    (t.busyNanos() - last.busyNanos()) / 1e9 / seconds / devices);
                    last = t;
                    lastNanos = now;
                    String line =
                            String.format(
                                    Locale.ROOT,
                                    "progress: epoch %d/%d, %d/%d samples (%d %%), %.1f/s,"
                                            + " accelerator busy %.0f %%, %d slow,%s ETA %s",
                                    Math.min(epochs, t.samples() / cases + 1),
                                    epochs,
                                    t.samples(),
                                    total,
                                    100 * t.samples() / total,
                                    rate,
                                    100 * busy,
                                    t.slow(),
                                    t.scheduledWorkers() == 0
                                            ? ""
                                            : " "
                                                    + t.activeWorkers()
                                                    + " of "
                                                    + t.scheduledWorkers()
                                                    + " workers active,",
                                    rate > 0
                                            ? Math.round((total - t.samples()) / rate) + " s"
                                            : "-");
                    err.print(terminal ? "\r" + line + "   " : line + "\n");
                    err.flush();
                    drawn = true;
                }
            }
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        } finally {
            if (drawn && terminal) {
                err.println();
            }
        }
    }

    /** Paths compare as absolute paths (the run stores them so), anything else as text. */
    private static boolean sameValue(OptionSpec o, String mine, String theirs) {
        if (o.type() == Path.class) {
            return Path.of(mine).toAbsolutePath().normalize().equals(Path.of(theirs));
        }
        return mine.equals(theirs);
    }

    static RunReport.CacheCounts cacheCounts(Map<String, Object> accumulators, boolean enabled) {
        if (!enabled) {
            return null;
        }
        Object hits = accumulators.get(CacheMetrics.HITS);
        Object misses = accumulators.get(CacheMetrics.MISSES);
        Object bytes = accumulators.get(CacheMetrics.BYTES);
        return new RunReport.CacheCounts(
                hits instanceof Long h ? h : 0,
                misses instanceof Long m ? m : 0,
                bytes instanceof Long b ? b : null);
    }

    static Double timeoutMillis(
            Map<String, Object> accumulators, boolean minato, TimeoutPolicy policy) {
        if (!minato) {
            return null;
        }
        Double ms = accumulators.get(AugmentOperator.TIMEOUT_MS) instanceof Double d ? d : null;
        // No worker set a deadline (an auto timeout over fewer samples than it needs to learn
        // one): the maximum over none is -Infinity; say "none".
        if (ms != null && Double.isFinite(ms)) {
            return ms;
        }
        return policy.isAuto() ? null : policy.timeoutNanos() / 1e6;
    }

    /**
     * GPUs seen through NVML are of no use when DJL's PyTorch is the bundled CPU build: says so in
     * one line and trains on as many CPU replicas instead.
     */
    static DeviceSpec withTorchDevices(DeviceSpec dev, PrintWriter err) {
        boolean wantsGpu = dev.devices().stream().anyMatch(TrainingDevice::isGpu);
        if (!wantsGpu) {
            return dev;
        }
        int torchGpus = Engine.getEngine("PyTorch").getGpuCount();
        if (torchGpus > 0) {
            return dev;
        }
        int n = dev.devices().size();
        err.println(
                "GPU present but DJL's PyTorch engine is a CPU build: running on "
                        + n
                        + " cpu device(s) instead of '"
                        + dev.spec()
                        + "' (set PYTORCH_LIBRARY_PATH to a CUDA libtorch 2.7.1, see README)");
        return DeviceSpec.parse(n == 1 ? "cpu" : "cpu:" + n);
    }
}
