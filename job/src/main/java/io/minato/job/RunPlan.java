package io.minato.job;

import io.minato.job.dataflow.LoaderJob;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.loader.TimeoutPolicy;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.TrainingSettings;
import io.minato.trainer.gpu.DeviceRequest;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.gpu.TrainingDevice;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.OptionalInt;

/**
 * One training run, decided before a sample is read and not changed after: the options, each typed
 * and checked where it was given ({@link Options}), resolved once against where the run goes (this
 * process's MiniCluster, or a cluster under {@code flink run}): its cores, devices, workers, slots
 * and network buffers, the accelerator and its optimizer, the ports and output files. {@link
 * TrainingRun}, the report and a detached run read this and nothing of the command line. A problem
 * is an {@link IllegalArgumentException} whose one line names the option.
 */
final class RunPlan {

    /**
     * What the train command's options ask for, each value typed and checked at its option.
     *
     * @param optimizer the real accelerator's optimizer, from the learning rate the workload trains
     *     at by default and the seed
     * @param slowWorkers {@code --slow-workers}; null: as many as the fast workers
     * @param serveTokenFile null: no token
     * @param report null: no report file
     * @param trace null: no trace file
     * @param runDir null: a new folder under {@code runs/} named by the time
     * @param metricsPort null: no metrics served
     * @param restoreFrom the checkpoint a resumed run starts from; null: a new run
     */
    record Options(
            DataSpec data,
            LoaderJob.Loader loader,
            int epochs,
            int batch,
            double width,
            String network,
            Optimizer optimizer,
            DeviceRequest devices,
            Workers workers,
            Integer slowWorkers,
            TimeoutPolicy timeout,
            AcceleratorChoice accelerator,
            String serveBind,
            Path serveTokenFile,
            int queueDepth,
            Path report,
            Path trace,
            Path runDir,
            Duration checkpointInterval,
            int restartAttempts,
            boolean webUi,
            boolean plots,
            int restPort,
            Integer metricsPort,
            long progressMillis,
            Path restoreFrom) {}

    /** The real accelerator's optimizer settings, once the workload's learning rate is known. */
    @FunctionalInterface
    interface Optimizer {
        TrainingSettings settings(float defaultLearningRate, long seed);
    }

    /** Where the devices listen and what a training process must present. */
    record Serving(String bind, int port, String token) {}

    final Options options;

    /** The training runs in this process (not under flink run): web UI, memory, progress. */
    final boolean embedded;

    /** Submitted with {@code flink run -d}: no client waits, the job writes its own report. */
    final boolean detached;

    /** This machine's cores (a client's, under flink run). */
    final int cores;

    final DeviceSpec devices;

    /**
     * The slots of the cluster this client submits to; empty when embedded or in application mode.
     */
    final OptionalInt clusterSlots;

    /** Whether the worker scheduler paces the workers ({@code --workers auto}). */
    final boolean scheduled;

    final int fastWorkers;
    final int slowWorkers;

    /** Which slots the batchers and trainers take. */
    final LoaderJob.TrainingSlots trainingSlots;

    /** The slots the job needs, and the network buffers it needs in one TaskManager. */
    final int slots;

    final long networkBuffers;

    /** The real accelerator's optimizer, before the data says which network; null: not real. */
    final TrainingSettings optimizer;

    /** The simulated accelerator; null: not simulated. */
    final AcceleratorFactory simulated;

    /** {@code --accelerator serve}: where the devices serve PyTorch processes; null: not served. */
    final Serving serving;

    final int restPort;
    final Integer metricsPort;

    /** The run's folder: {@code --run-dir}, or a new one under {@code runs/} named by the time. */
    final Path runDir;

    private RunPlan(Options o, PrintWriter err) {
        options = o;
        embedded = FlinkSetup.embedded();
        cores = Runtime.getRuntime().availableProcessors();
        scheduled = o.workers().auto();
        // Submitted to a cluster whose TaskManagers get GPUs from Flink: the trainers take
        // theirs there, in whichever TaskManagers have them; this machine's GPUs (a client's) do
        // not matter. In application mode main() runs in the JobManager, before TaskManagers
        // register.
        long flinkGpus = embedded ? 0 : FlinkSetup.flinkGpus();
        OptionalInt clusterGpus =
                flinkGpus > 0 && !FlinkSetup.applicationMode()
                        ? ClusterSlots.gpus(FlinkSetup.clientConfiguration())
                        : OptionalInt.empty();
        DeviceSpec dev = DeviceSpec.resolveForCluster(o.devices(), flinkGpus, clusterGpus);
        dev.fallbackNotice().ifPresent(err::println);
        clusterSlots =
                embedded || FlinkSetup.applicationMode()
                        ? OptionalInt.empty()
                        : ClusterSlots.total(FlinkSetup.clientConfiguration());
        if (dev.fromFlink()
                && clusterGpus.isPresent()
                && clusterGpus.getAsInt() < dev.devices().size()) {
            // Each training slot requires a GPU: without enough, Flink would wait for slots
            // that never come.
            throw new IllegalArgumentException(
                    ClusterSlots.tooFewGpus(dev.devices().size(), clusterGpus.getAsInt()));
        }
        int fast = scheduled ? cores : o.workers().count();
        if (scheduled && clusterSlots.isPresent()) {
            // On a cluster: a worker for every slot the trainers leave, on whichever
            // TaskManagers hold them (this client's cores say nothing about them).
            fast = ClusterSlots.preparationWorkers(clusterSlots.getAsInt(), dev.devices().size());
        }
        fastWorkers = fast;
        slowWorkers = o.slowWorkers() != null ? o.slowWorkers() : fast;
        DataSpec data = o.data();
        data.workload().check(data);
        if (data.workload().servedOnly() && !(o.accelerator() instanceof AcceleratorChoice.Serve)) {
            throw new IllegalArgumentException(
                    "--workload "
                            + data.workload().name()
                            + " trains in a PyTorch process: give --accelerator serve (the DJL"
                            + " trainer does not take its samples)");
        }
        if (o.accelerator() instanceof AcceleratorChoice.Serve serve) {
            if (o.loader() != LoaderJob.Loader.minato && dev.devices().size() > 1) {
                throw new IllegalArgumentException(
                        "--loader "
                                + o.loader()
                                + " deals whole batches in turn: serving several ranks takes"
                                + " --loader minato");
            }
            serving = serving(o, serve.port());
            optimizer = null;
        } else if (o.accelerator() instanceof AcceleratorChoice.Real) {
            if (!dev.fromFlink()) {
                dev = withTorchDevices(dev, err);
            }
            data.workload().checkForNetwork(data);
            TrainingSettings asked =
                    o.optimizer().settings(data.workload().defaultLearningRate(), data.seed());
            // One precision for the whole run: replicas apply one update to identical masters.
            optimizer = asked.withPrecision(asked.precision().forDevices(dev.devices()));
            serving = serving(o, -1);
        } else {
            optimizer = null;
            serving = serving(o, -1);
        }
        simulated = o.accelerator().simulated();
        devices = dev;
        int g = dev.devices().size();
        // On a cluster preparation may run on other hosts than training, and training where
        // Flink's GPUs are when the cluster declares them.
        trainingSlots =
                embedded
                        ? LoaderJob.TrainingSlots.SHARED
                        : dev.fromFlink()
                                ? LoaderJob.TrainingSlots.ON_GPUS
                                : LoaderJob.TrainingSlots.APART;
        slots = LoaderJob.slots(o.loader(), fastWorkers, slowWorkers, g, trainingSlots);
        if (clusterSlots.isPresent() && clusterSlots.getAsInt() < slots) {
            // Flink would wait for slots that never come, then fail minutes later.
            throw new IllegalArgumentException(
                    ClusterSlots.tooFew(clusterSlots.getAsInt(), slots, g));
        }
        networkBuffers = LoaderJob.networkBuffers(o.loader(), fastWorkers, slowWorkers, g);
        int rest = o.restPort();
        if (o.webUi() && embedded) {
            // Before anything is read or written; 0: a free port, which the start line shows.
            rest = rest == 0 ? FlinkSetup.freePort() : rest;
            FlinkSetup.requireFree(rest);
        }
        restPort = rest;
        metricsPort = o.metricsPort() == null ? null : metricsPort(o.metricsPort());
        // Before any sample: a report or trace that cannot be written is lost after the run.
        if (o.report() != null) {
            OutputPaths.requireWritableFile("--report", o.report());
        }
        if (o.trace() != null) {
            OutputPaths.requireWritableFile("--trace", o.trace());
        }
        detached = !embedded && FlinkSetup.detached();
        runDir =
                o.runDir() != null
                        ? o.runDir()
                        : Path.of(
                                "runs",
                                LocalDateTime.now()
                                        .format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }

    /** Resolves the options; a problem is an {@link IllegalArgumentException} naming the option. */
    static RunPlan of(Options o, PrintWriter err) {
        return new RunPlan(o, err);
    }

    /**
     * Where the devices serve, on {@code port} ({@code -1}: not served, when the serving options
     * must be absent).
     */
    private static Serving serving(Options o, int port) {
        if (port < 0) {
            if (o.serveTokenFile() != null || !o.serveBind().equals("127.0.0.1")) {
                throw new IllegalArgumentException(
                        "--serve-bind and --serve-token-file go with --accelerator serve");
            }
            return null;
        }
        String token = null;
        if (o.serveTokenFile() != null) {
            try {
                List<String> lines = Files.readAllLines(o.serveTokenFile());
                token = lines.isEmpty() ? "" : lines.get(0).strip();
            } catch (IOException e) {
                throw new IllegalArgumentException(
                        "--serve-token-file " + o.serveTokenFile() + ": cannot read it: " + e);
            }
            if (token.isEmpty()) {
                throw new IllegalArgumentException(
                        "--serve-token-file " + o.serveTokenFile() + ": the first line is empty");
            }
        }
        InetAddress bind;
        try {
            bind = InetAddress.getByName(o.serveBind());
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "--serve-bind " + o.serveBind() + ": not an address of this host");
        }
        if (!bind.isLoopbackAddress() && token == null) {
            throw new IllegalArgumentException(
                    "--serve-bind "
                            + o.serveBind()
                            + " serves other hosts: give --serve-token-file, whose token every"
                            + " training process must present");
        }
        return new Serving(o.serveBind(), port, token);
    }

    private Integer metricsPort(int port) {
        if (!embedded) {
            throw new IllegalArgumentException(
                    "--metrics-port serves the embedded run's metrics; a cluster reports"
                            + " through the metrics.reporter.* keys of its config.yaml"
                            + " (see flink-conf/config.yaml)");
        }
        port = port == 0 ? FlinkSetup.freePort() : port;
        FlinkSetup.requireFree(
                port,
                "port "
                        + port
                        + " on localhost is taken: give --metrics-port N for another"
                        + " port, or 0 for a free one");
        return port;
    }

    /** Whether Minato's loader runs (the baselines have no slow path). */
    boolean minato() {
        return options.loader() == LoaderJob.Loader.minato;
    }

    /** The workers the report counts: Minato's fast and slow, or the baselines' threads. */
    RunReport.Workers workers() {
        boolean m = minato();
        return new RunReport.Workers(
                m ? fastWorkers : fastWorkers + slowWorkers, m ? slowWorkers : 0, m && scheduled);
    }

    /**
     * GPUs seen through NVML are of no use when DJL's PyTorch is the bundled CPU build: says so in
     * one line and trains on as many CPU replicas instead.
     */
    static DeviceSpec withTorchDevices(DeviceSpec dev, PrintWriter err) {
        boolean wantsGpu = dev.devices().stream().anyMatch(TrainingDevice::isGpu);
        if (!wantsGpu || DeviceSpec.torchGpus() > 0) {
            return dev;
        }
        int n = dev.devices().size();
        err.println(
                "GPU present but DJL's PyTorch engine is a CPU build: running on "
                        + n
                        + " cpu device(s) instead of '"
                        + dev.spec()
                        + "' (set PYTORCH_LIBRARY_PATH to a CUDA libtorch 2.7.1, see README)");
        return DeviceSpec.cpus(n);
    }
}
