package io.minato.job;

import io.minato.job.dataflow.LoaderJob;
import io.minato.job.metrics.LoopbackPrometheusReporterFactory;
import io.minato.trainer.gpu.FlinkGpus;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.environment.LocalStreamEnvironment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The job's Flink settings, in one place: what correctness needs (exactly-once checkpoints on
 * RocksDB, unaligned under backpressure, restarts, no Kryo) and where the run writes.
 */
public final class FlinkSetup {
    private FlinkSetup() {}

    /**
     * Removes the embedded cluster's temporary folder ({@code io.tmp.dirs}) and all in it: Flink's
     * working folders, RocksDB's, and the copy of its RPC jar (24 MB) that Flink's own loader
     * extracts where {@link CachedRpcSystemLoader} could not use its cache. The cluster deletes
     * most of these when it closes, but it closes asynchronously after the job and the process may
     * end first; a process killed outright leaves them, and the next run in the folder ({@code
     * --resume}) removes them before it starts. What cannot be deleted is left, never an error.
     */
    static void clearTmp(Path tmpDir) {
        if (!Files.isDirectory(tmpDir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        deleteAll(tmpDir);
    }

    /**
     * Waits up to {@code within} for the embedded cluster that works in {@code tmpDir} to have
     * closed (it deletes its {@code minicluster_*} working folder last), then {@link #clearTmp}:
     * clearing it while the cluster still closes misses what the cluster writes meanwhile (seen:
     * its working folder and the web UI's left after a cancelled run).
     */
    static void clearTmpOnceClosed(Path tmpDir, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (clusterWorksIn(tmpDir) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        clearTmp(tmpDir);
    }

    private static boolean clusterWorksIn(Path tmpDir) {
        try (Stream<Path> entries = Files.list(tmpDir)) {
            return entries.anyMatch(p -> p.getFileName().toString().startsWith("minicluster_"));
        } catch (IOException | UncheckedIOException e) {
            return false;
        }
    }

    private static void deleteAll(Path tmpDir) {
        try (Stream<Path> all = Files.walk(tmpDir)) {
            all.sorted(Comparator.reverseOrder())
                    .forEach(
                            p -> {
                                try {
                                    Files.deleteIfExists(p);
                                } catch (IOException e) {
                                    // in use, or gone already: Flink deletes its own too
                                }
                            });
        } catch (IOException | UncheckedIOException e) {
            // a folder that vanished while walking it: Flink's own clean-up
        }
    }

    /**
     * A checkpoint still pending after this many intervals fails, and the next one is triggered:
     * Flink's own timeout is 10 minutes whatever the interval, and with one checkpoint at a time a
     * stuck one holds back all others for that long.
     */
    static final int CHECKPOINT_TIMEOUT_INTERVALS = 3;

    /** The least checkpoint timeout, for short intervals: a real model's state takes seconds. */
    static final Duration MIN_CHECKPOINT_TIMEOUT = Duration.ofSeconds(10);

    /**
     * Failed checkpoints in a row (timed out, or failed to write) that the job goes on after; one
     * more fails it over to its last checkpoint. Flink's default, 0, fails the job over on the
     * first.
     */
    static final int TOLERABLE_FAILED_CHECKPOINTS = 3;

    /**
     * How long a checkpoint may be pending at the checkpoint interval {@code interval}: {@value
     * #CHECKPOINT_TIMEOUT_INTERVALS} intervals, at least {@link #MIN_CHECKPOINT_TIMEOUT}.
     */
    static Duration checkpointTimeout(Duration interval) {
        Duration t = interval.multipliedBy(CHECKPOINT_TIMEOUT_INTERVALS);
        return t.compareTo(MIN_CHECKPOINT_TIMEOUT) < 0 ? MIN_CHECKPOINT_TIMEOUT : t;
    }

    /**
     * Settings every run of the job needs, on the embedded cluster and on a real one.
     *
     * <p>Checkpoints: every {@code checkpointInterval}, each failing when pending longer than
     * {@link #checkpointTimeout}, {@value #TOLERABLE_FAILED_CHECKPOINTS} failed ones in a row
     * tolerated.
     *
     * <p>Restarts: exponential delay (0.1 s, doubling to at most 2 s, back to 0.1 s after a minute
     * without a failure). Flink's own count is unbounded: the trainers' coordinator counts the
     * failures since the last completed checkpoint and stops the job with the cause past {@code
     * restarts} of them (TrainerSink.Builder#optRestartsWithoutCheckpoint), so that a job that
     * checkpoints between failures goes on, however often they come. 0: no restarts.
     */
    public static Configuration jobConfiguration(
            Path runDir, Duration checkpointInterval, int restarts) {
        Map<String, String> c = new HashMap<>();
        c.put("state.backend.type", "rocksdb");
        c.put(
                "execution.checkpointing.dir",
                runDir.resolve("checkpoints").toAbsolutePath().toUri().toString());
        // Where flink stop JOB_ID (or flink savepoint) puts a savepoint unless told elsewhere.
        c.put(
                "execution.checkpointing.savepoint-dir",
                runDir.resolve("savepoints").toAbsolutePath().toUri().toString());
        c.put("execution.checkpointing.interval", checkpointInterval.toMillis() + " ms");
        c.put("execution.checkpointing.mode", "EXACTLY_ONCE");
        c.put(
                "execution.checkpointing.timeout",
                checkpointTimeout(checkpointInterval).toMillis() + " ms");
        c.put(
                "execution.checkpointing.tolerable-failed-checkpoints",
                Integer.toString(TOLERABLE_FAILED_CHECKPOINTS));
        // A killed, failed or cancelled run keeps its latest checkpoint: train --resume RUN_DIR
        // (or flink run -s) continues from it.
        c.put(
                "execution.checkpointing.externalized-checkpoint-retention",
                "RETAIN_ON_CANCELLATION");
        c.put("execution.checkpointing.unaligned.enabled", "true");
        // Flink 2.3 reads uncompressed operator state a byte at a time, one read(2) each
        // (CompressibleFSDataInputStream overrides only read()): restoring a trainer's 20 MB model
        // took 7 s in a new TaskManager. Snappy's stream buffers: a kill -9's first checkpoint
        // came 17.8-18.6 s after the kill without it, 10.3-12.0 s with it.
        c.put("execution.checkpointing.snapshot-compression", "true");
        // Flink declines checkpoints after a restore until the tasks have consumed the in-flight
        // records they recovered; the workers are chained to their sample tasks (SampleSource) and
        // the samples' bytes wait in the handoff, so little is in flight and that is quick.
        // Checkpointing during that recovery (FLIP-547) stays off: in Flink 2.3.0 a local input
        // channel can write recovered buffers into such a checkpoint twice (FLINK-40016, fixed
        // after 2.3.0), and a later restore then replays their records twice (most likely the
        // sample once seen trained twice in LoaderJobTest's three-recoveries test).
        c.put("execution.checkpointing.during-recovery.enabled", "false");
        c.put("execution.checkpointing.unaligned.recover-output-on-downstream.enabled", "true");
        if (restarts > 0) {
            c.put("restart-strategy.type", "exponential-delay");
            c.put("restart-strategy.exponential-delay.initial-backoff", "100 ms");
            c.put("restart-strategy.exponential-delay.max-backoff", "2 s");
            c.put("restart-strategy.exponential-delay.backoff-multiplier", "2.0");
            c.put("restart-strategy.exponential-delay.reset-backoff-threshold", "1 min");
            c.put(
                    "restart-strategy.exponential-delay.attempts-before-reset-backoff",
                    Integer.toString(Integer.MAX_VALUE));
        } else {
            c.put("restart-strategy.type", "none");
        }
        c.put("pipeline.generic-types", "false");
        // Chained operators would otherwise deep-copy every batch (up to tens of MiB). Safe here:
        // no operator changes a record after emitting it, and the sample serializers always
        // deserialize into new objects.
        c.put("pipeline.object-reuse", "true");
        return Configuration.fromMap(c);
    }

    /**
     * The environment: the cluster's when submitted with {@code flink run}, else an embedded
     * MiniCluster with enough slots and network buffers and, if asked, the web UI on {@code
     * restPort} and Prometheus metrics on {@code metricsPort} (null: none), keeping its temporary
     * files (RocksDB's working folders, Flink's RPC jar, the web UI's) in {@code tmpDir}. Without
     * the web UI the MiniCluster's REST endpoint (which it always starts) takes a free port, so
     * that runs side by side never collide.
     */
    public static StreamExecutionEnvironment environment(
            Configuration job,
            int slots,
            long networkBuffers,
            boolean webUi,
            int restPort,
            Integer metricsPort,
            Path tmpDir) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(job);
        if (!(env instanceof LocalStreamEnvironment)) {
            return env; // inside `flink run`: the cluster's environment
        }
        Configuration local = new Configuration(job);
        local.setString("taskmanager.numberOfTaskSlots", Integer.toString(slots));
        local.setString("rest.port", webUi ? Integer.toString(restPort) : "0");
        local.setString("rest.bind-address", "localhost");
        // Uploading a jar through the web UI runs arbitrary code: off, as in flink-conf.
        local.setString("web.submit.enable", "false");
        // Nothing listens beyond this machine: the BLOB server (and any RPC or data port) binds
        // to loopback, not to every interface; and no other web page may call the REST API.
        local.setString("jobmanager.bind-host", "localhost");
        local.setString("taskmanager.bind-host", "localhost");
        local.setString("web.access-control-allow-origin", "http://localhost:" + restPort);
        local.setString("io.tmp.dirs", tmpDir.toAbsolutePath().toString());
        // The web UI's own folders, else under java.io.tmpdir (/tmp/flink-web-upload, seen).
        local.setString("web.tmpdir", tmpDir.toAbsolutePath().toString());
        local.setString("web.upload.dir", tmpDir.resolve("web-upload").toAbsolutePath().toString());
        // snappy-java (the checkpoints' compression) unpacks its native library into
        // java.io.tmpdir, deleted at exit: a killed run left /tmp/snappy-*-libsnappyjava.so.
        if (System.getProperty(SNAPPY_TMPDIR) == null) {
            System.setProperty(SNAPPY_TMPDIR, tmpDir.toAbsolutePath().toString());
        }
        if (metricsPort != null) {
            // Prometheus scrapes http://localhost:PORT/metrics; loopback only, as the rest.
            local.setString(
                    "metrics.reporter.prom.factory.class",
                    LoopbackPrometheusReporterFactory.class.getName());
            local.setString("metrics.reporter.prom.host", "localhost");
            local.setString("metrics.reporter.prom.port", Integer.toString(metricsPort));
        }
        networkMemory(local, networkBuffers);
        return webUi
                ? StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(local)
                : StreamExecutionEnvironment.createLocalEnvironment(slots, local);
    }

    /**
     * The embedded TaskManager's network memory (tests' MiniClusters use it too), for a job that
     * needs {@code buffers} network buffers ({@link LoaderJob#networkBuffers}): Flink allocates and
     * zero-fills all of it when the TaskManager starts, and on this kind of machine touching fresh
     * memory is what a short run spends most of its system time on (128 MiB cost 0.27 s), so it is
     * sized to the job rather than to the host. Samples between operators of one TaskManager cross
     * as identities (SampleHandoff); whole patches (1-10 MiB) travel to another TaskManager, and
     * large segments keep them from crawling through credit-based flow control a few segments at a
     * time: 256 KiB, halved (to 32 KiB at least) while the whole would pass {@link
     * #MAX_NETWORK_BYTES}.
     *
     * @throws IllegalArgumentException in one line, naming the options, when even the smallest
     *     segments need more than {@link #MAX_NETWORK_BYTES}
     */
    static Configuration networkMemory(Configuration c, long buffers) {
        long needed = buffers + NETWORK_SPARE_BUFFERS;
        int segment = MAX_SEGMENT_BYTES;
        while (segment > MIN_SEGMENT_BYTES && needed * segment > MAX_NETWORK_BYTES) {
            segment /= 2;
        }
        if (needed * segment > MAX_NETWORK_BYTES) {
            throw new IllegalArgumentException(
                    String.format(
                            java.util.Locale.ROOT,
                            "this job is too wide for one TaskManager: its channels need %d MiB"
                                    + " of network memory (at most %d MiB); give fewer --workers"
                                    + " or --slow-workers, or fewer --devices",
                            (needed * segment) >> 20,
                            MAX_NETWORK_BYTES >> 20));
        }
        String bytes = needed * segment + "b";
        c.setString("taskmanager.memory.segment-size", segment + "b");
        c.setString("taskmanager.memory.network.min", bytes);
        c.setString("taskmanager.memory.network.max", bytes);
        return c;
    }

    /** Where snappy-java unpacks its native library (default: java.io.tmpdir). */
    static final String SNAPPY_TMPDIR = "org.xerial.snappy.tempdir";

    /** The most network memory an embedded run takes: Flink's own default ceiling. */
    static final long MAX_NETWORK_BYTES = 1L << 30;

    static final int MAX_SEGMENT_BYTES = 256 << 10;
    static final int MIN_SEGMENT_BYTES = 32 << 10;

    /** Beyond the job's count: Flink's own exchanges (none today) and rounding. */
    static final int NETWORK_SPARE_BUFFERS = 16;

    /** A port free on localhost now, as the kernel picks one. */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalArgumentException("no free port on localhost: " + e.getMessage());
        }
    }

    /**
     * Waits until nothing listens on localhost's {@code port} any more, up to {@code within}:
     * whether it closed.
     */
    static boolean awaitClosed(int port, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (System.nanoTime() < deadline) {
            try (Socket probe = new Socket()) {
                probe.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
            } catch (IOException refused) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    /**
     * Whether {@code main} runs inside a JobManager: Flink's application mode runs it there with
     * its embedded executor.
     */
    static boolean applicationMode() {
        return "embedded"
                .equals(
                        StreamExecutionEnvironment.getExecutionEnvironment()
                                .getConfiguration()
                                .get(DeploymentOptions.TARGET));
    }

    /**
     * How many GPUs each TaskManager gets from Flink's external resource framework, by the
     * configuration the job is submitted with ({@link FlinkGpus#amount}).
     */
    static long flinkGpus() {
        return FlinkGpus.amount(clientConfiguration());
    }

    /** The configuration {@code flink run} submits with (its config.yaml and -D options). */
    static ReadableConfig clientConfiguration() {
        return StreamExecutionEnvironment.getExecutionEnvironment().getConfiguration();
    }

    /** Whether {@code flink run -d} submits the job: nobody waits for its end. */
    static boolean detached() {
        return !StreamExecutionEnvironment.getExecutionEnvironment()
                .getConfiguration()
                .get(DeploymentOptions.ATTACHED);
    }

    /** Whether the job runs in this JVM (not submitted to a cluster with {@code flink run}). */
    static boolean embedded() {
        return StreamExecutionEnvironment.getExecutionEnvironment()
                instanceof LocalStreamEnvironment;
    }

    /**
     * Fails in one line, naming the options that help, when something already listens on
     * localhost:{@code port}: Flink's own failure is a 24-line stack trace after the cluster half
     * started.
     *
     * @throws IllegalArgumentException saying so
     */
    static void requireFree(int port) {
        requireFree(
                port,
                "port "
                        + port
                        + " on localhost is taken (another run's web UI?): give --rest-port N"
                        + " for another port (0 picks a free one), or --no-web-ui");
    }

    /**
     * Fails with {@code message} when something already listens on localhost:{@code port}.
     *
     * @throws IllegalArgumentException saying so
     */
    static void requireFree(int port, String message) {
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress("localhost", port));
        } catch (IOException e) {
            throw new IllegalArgumentException(message);
        }
    }
}
