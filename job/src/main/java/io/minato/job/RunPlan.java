package io.minato.job;

import ai.djl.engine.Engine;
import io.minato.job.dataflow.LoaderJob;
import io.minato.loader.TimeoutPolicy;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.TrainingSettings;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.gpu.TrainingDevice;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.OptionalInt;
import picocli.CommandLine.ParameterException;

/**
 * The train command's options checked against each other and against where the run goes (this
 * process's MiniCluster, or a cluster under {@code flink run}): the devices, the workers, the
 * deadline, the accelerator and its optimizer, the ports and output files. Everything here is
 * decided before a sample is read; a problem is a usage error naming the option.
 */
final class RunPlan {
    final TrainCommand options;

    /** The training runs in this process (not under flink run): web UI, memory, progress. */
    final boolean embedded;

    /** Submitted with {@code flink run -d}: no client waits, the job writes its own report. */
    final boolean detached;

    final DeviceSpec devices;

    /**
     * The slots of the cluster this client submits to; empty when embedded or in application mode.
     */
    final OptionalInt clusterSlots;

    /** Whether the worker scheduler paces the workers ({@code --workers auto}). */
    final boolean scheduled;

    final int fastWorkers;
    final int slowWorkers;
    final TimeoutPolicy timeout;

    /** The real accelerator's optimizer, before the data says which network; null: simulated. */
    final TrainingSettings optimizer;

    /** The simulated accelerator; null: real. */
    final AcceleratorFactory simulated;

    /** {@code --accelerator serve}: where the devices serve PyTorch processes; null: not served. */
    final Serving serving;

    /** Where the devices listen and what a training process must present. */
    record Serving(String bind, int port, String token) {}

    final int restPort;
    final Integer metricsPort;

    private RunPlan(TrainCommand o, PrintWriter err) {
        options = o;
        embedded = FlinkSetup.embedded();
        scheduled = o.workers.equalsIgnoreCase("auto");
        int fast = scheduled ? Runtime.getRuntime().availableProcessors() : parseWorkers(o.workers);
        requireAtLeast("--workers", fast, 1);
        if (o.slowWorkers != null) {
            requireAtLeast("--slow-workers", o.slowWorkers, 1);
        }
        requireAtLeast("--queue-depth", o.queueDepth, 1);
        requireAtLeast("--checkpoint-interval", o.checkpointMillis, 10);
        requireAtLeast("--restart-attempts", o.restartAttempts, 0);
        requireAtLeast("--progress-interval", o.progressMillis, 0);
        // Submitted to a cluster whose TaskManagers get GPUs from Flink: the trainers take
        // theirs there, in whichever TaskManagers have them; this machine's GPUs (a client's) do
        // not matter. In application mode main() runs in the JobManager, before TaskManagers
        // register.
        long flinkGpus = embedded ? 0 : FlinkSetup.flinkGpus();
        OptionalInt clusterGpus =
                flinkGpus > 0 && !FlinkSetup.applicationMode()
                        ? ClusterSlots.gpus(FlinkSetup.clientConfiguration())
                        : OptionalInt.empty();
        DeviceSpec dev = DeviceSpec.parseForCluster(o.devices, flinkGpus, clusterGpus);
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
        if (scheduled && clusterSlots.isPresent()) {
            // On a cluster: a worker for every slot the trainers leave, on whichever
            // TaskManagers hold them (this client's cores say nothing about them).
            fast = ClusterSlots.preparationWorkers(clusterSlots.getAsInt(), dev.devices().size());
        }
        fastWorkers = fast;
        slowWorkers = o.slowWorkers != null ? o.slowWorkers : fast;
        timeout = TimeoutPolicy.parse(o.timeout);
        DataOptions data = o.data;
        data.workload.check(data);
        Serving serve = serving(o);
        if (serve != null) {
            if (o.loader != LoaderJob.Loader.minato && dev.devices().size() > 1) {
                throw new IllegalArgumentException(
                        "--loader "
                                + o.loader
                                + " deals whole batches in turn: serving several ranks takes"
                                + " --loader minato");
            }
            optimizer = null;
            simulated = null;
        } else if (o.accelerator.equals("real")) {
            if (!dev.fromFlink()) {
                dev = withTorchDevices(dev, err);
            }
            data.workload.checkForNetwork(data);
            optimizer =
                    o.optimizer.settings(
                            o.model.width(), data.workload.defaultLearningRate(), data.seed);
            simulated = null;
        } else {
            optimizer = null;
            simulated = SimulatedAccelerator.parse(o.accelerator);
        }
        serving = serve;
        devices = dev;
        int rest = o.restPort;
        if (o.webUi && embedded) {
            // Before anything is read or written; 0: a free port, which the start line shows.
            rest = rest == 0 ? FlinkSetup.freePort() : rest;
            FlinkSetup.requireFree(rest);
        }
        restPort = rest;
        metricsPort = o.metricsPort == null ? null : metricsPort(o.metricsPort);
        // Before any sample: a report or trace that cannot be written is lost after the run.
        if (o.report != null) {
            OutputPaths.requireWritableFile("--report", o.report);
        }
        if (o.trace != null) {
            OutputPaths.requireWritableFile("--trace", o.trace);
        }
        detached = !embedded && FlinkSetup.detached();
    }

    /** {@code --accelerator serve[:PORT]} and its options; null for another accelerator. */
    private static Serving serving(TrainCommand o) {
        String a = o.accelerator;
        if (!a.equals("serve") && !a.startsWith("serve:")) {
            if (o.serveTokenFile != null || !o.serveBind.equals("127.0.0.1")) {
                throw new IllegalArgumentException(
                        "--serve-bind and --serve-token-file go with --accelerator serve");
            }
            return null;
        }
        int port = 0;
        if (a.startsWith("serve:")) {
            try {
                port = Integer.parseInt(a.substring("serve:".length()));
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException(
                        "bad accelerator '" + a + "': expected serve or serve:PORT, PORT 1-65535");
            }
        }
        String token = null;
        if (o.serveTokenFile != null) {
            try {
                List<String> lines = Files.readAllLines(o.serveTokenFile);
                token = lines.isEmpty() ? "" : lines.get(0).strip();
            } catch (IOException e) {
                throw new IllegalArgumentException(
                        "--serve-token-file " + o.serveTokenFile + ": cannot read it: " + e);
            }
            if (token.isEmpty()) {
                throw new IllegalArgumentException(
                        "--serve-token-file " + o.serveTokenFile + ": the first line is empty");
            }
        }
        InetAddress bind;
        try {
            bind = InetAddress.getByName(o.serveBind);
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "--serve-bind " + o.serveBind + ": not an address of this host");
        }
        if (!bind.isLoopbackAddress() && token == null) {
            throw new IllegalArgumentException(
                    "--serve-bind "
                            + o.serveBind
                            + " serves other hosts: give --serve-token-file, whose token every"
                            + " training process must present");
        }
        return new Serving(o.serveBind, port, token);
    }

    /** Checks the options; a problem is a usage error of {@code o}'s command line. */
    static RunPlan of(TrainCommand o, PrintWriter err) {
        try {
            return new RunPlan(o, err);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(o.spec.commandLine(), e.getMessage());
        }
    }

    private Integer metricsPort(int port) {
        if (!embedded) {
            throw new IllegalArgumentException(
                    "--metrics-port serves the embedded run's metrics; a cluster reports"
                            + " through the metrics.reporter.* keys of its config.yaml"
                            + " (see flink-conf/config.yaml)");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException(
                    "--metrics-port must be a port (0-65535), not " + port);
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

    /** The run's folder: {@code --run-dir}, or a new one under {@code runs/} named by the time. */
    Path runDir() {
        return options.runDir != null
                ? options.runDir
                : Path.of(
                        "runs",
                        LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }

    /** Whether Minato's loader runs (the baselines have no slow path). */
    boolean minato() {
        return options.loader == LoaderJob.Loader.minato;
    }

    private static void requireAtLeast(String option, long value, long least) {
        if (value < least) {
            throw new IllegalArgumentException(option + " must be >= " + least + ", not " + value);
        }
    }

    private static int parseWorkers(String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--workers must be auto or a number, not '" + value + "'");
        }
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
