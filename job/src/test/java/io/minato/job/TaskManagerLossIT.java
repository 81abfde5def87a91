package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session cluster of one TaskManager whose TaskManager is killed (kill -9) five times while a job
 * submitted with {@code flink run} trains, a new one started in its place at once, as {@code
 * scripts/cluster kill-taskmanager} does: each restore must complete a checkpoint within a bound of
 * its kill, no checkpoint may time out, the job must not run out of restarts (each kill comes after
 * a completed checkpoint, five within about a minute), and every (epoch, index) is trained once.
 * The kills come at varied moments after the restore's first checkpoint: three while a checkpoint
 * is under way (when a worker's TaskManager lost in the middle of a checkpoint left its
 * coordinator's events held back for good, and the next checkpoint waiting for them), two at once
 * or soon after it.
 */
class TaskManagerLossIT {
    private static final int KILLS = 5;

    /** After the restore's first checkpoint, how long each kill waits. */
    private static final long[] KILL_AFTER_MILLIS = {0, 0, 1300, 700, 200};

    /** Whether each kill waits, after that, for a checkpoint under way. */
    private static final boolean[] KILL_IN_CHECKPOINT = {true, false, true, false, true};

    /**
     * From a kill to the restore's first checkpoint, at most: noticing the loss (heartbeats every
     * second), a new TaskManager's JVM starting on this loaded machine, the tasks restored; under
     * the checkpoint timeout (10 s) plus an interval, which a stalled checkpoint would take.
     */
    private static final Duration BOUND = Duration.ofSeconds(25);

    private static final Duration REST_CACHE = Duration.ofSeconds(5);

    private static final int EPOCHS = 180;

    /** The generated cases, all trained on (no held-out case). */
    private static final int CASES = 5;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @Test
    void shouldCheckpointAfterEachOfFiveTaskManagerLossesAndTrainEverySampleOnce(@TempDir Path tmp)
            throws Exception {
        Path jar = ClusterProcesses.jobJar();
        Path data = ClusterProcesses.generatedData(tmp);
        int rest = FlinkSetup.freePort();
        List<String> ports =
                List.of(
                        "-D",
                        "rest.port=" + rest,
                        "-D",
                        "jobmanager.rpc.port=" + FlinkSetup.freePort());
        List<String> jobManager = ClusterProcesses.java(null, tmp.resolve("jm.log"));
        jobManager.add("org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint");
        jobManager.addAll(List.of("--configDir", ClusterProcesses.flinkConf().toString()));
        jobManager.addAll(ports);
        jobManager.addAll(List.of("-D", "jobmanager.memory.process.size=1g"));
        // Checkpoint statistics fresh enough to see one under way (Flink caches them for 3 s).
        jobManager.addAll(List.of("-D", "rest.cache.checkpoint-statistics.timeout=20 ms"));
        List<String> resources = ClusterProcesses.taskManagerResources(tmp, null, "1536m");
        Process jm = ClusterProcesses.start(jobManager, tmp.resolve("jm.out"), Map.of());
        List<Process> tms = new ArrayList<>();
        Process client = null;
        try {
            tms.add(taskManager(tmp, resources, ports, 0));
            Path run = tmp.resolve("run");
            Path report = tmp.resolve("report.json");
            Path trace = tmp.resolve("trace.csv");
            List<String> args = new ArrayList<>(List.of("run", jar.toString()));
            args.addAll(
                    List.of(
                            "train",
                            "--data",
                            data.toString(),
                            "--patch",
                            "32",
                            "--batch",
                            "2",
                            "--epochs",
                            Integer.toString(EPOCHS),
                            "--eval-cases",
                            "0",
                            "--devices",
                            "cpu:1",
                            "--workers",
                            "2",
                            "--accelerator",
                            "simulated:50",
                            "--report",
                            report.toString(),
                            "--trace",
                            trace.toString(),
                            "--run-dir",
                            run.toString()));
            URI api = URI.create("http://localhost:" + rest);
            client =
                    ClusterProcesses.startClient(
                            ClusterProcesses.flinkCommand(api, tmp, args), tmp);
            String job = runningJob(api, client, tmp);
            awaitCompletedAfter(api, job, 0, client, tmp, Duration.ofMinutes(2));

            List<Double> seconds = new ArrayList<>();
            for (int k = 0; k < KILLS; k++) {
                Thread.sleep(KILL_AFTER_MILLIS[k]);
                if (KILL_IN_CHECKPOINT[k]) {
                    awaitCheckpointUnderWay(api, job, client, tmp);
                }
                Process dying = tms.get(tms.size() - 1);
                long kill = System.currentTimeMillis();
                dying.destroyForcibly(); // SIGKILL
                dying.waitFor(30, TimeUnit.SECONDS);
                tms.add(taskManager(tmp, resources, ports, k + 1));
                long checkpointed = awaitCompletedAfter(api, job, kill, client, tmp, BOUND);
                seconds.add((checkpointed - kill) / 1000.0);
            }
            System.out.println("first checkpoint after each kill (s): " + seconds);
            assertThat(seconds).allSatisfy(s -> assertThat(s).isLessThan(BOUND.toSeconds()));

            long lastKill = System.currentTimeMillis();
            assertThat(client.waitFor(5, TimeUnit.MINUTES)).as("the client ended").isTrue();
            System.out.printf(
                    "the job ended %.1f s after the last kill's checkpoint was seen%n",
                    (System.currentTimeMillis() - lastKill) / 1000.0);
            String log = Files.readString(tmp.resolve("client.log"));
            assertThat(client.exitValue()).as(log).isZero();
            assertThat(MiniClusterJobs.trainedOnce(trace))
                    .as("every (epoch, index) once")
                    .hasSize(CASES * EPOCHS);
            Map<?, ?> checkpoints =
                    (Map<?, ?>)
                            ((Map<?, ?>) Json.parse(Files.readString(report))).get("checkpoints");
            System.out.println("the report's checkpoints: " + checkpoints);
            // A lost TaskManager may cost more than one failure before it is declared lost.
            assertThat(((Number) checkpoints.get("restores")).longValue())
                    .isGreaterThanOrEqualTo(KILLS);
            assertThat(((Number) checkpoints.get("timed_out")).longValue()).isZero();
        } finally {
            if (client != null) {
                client.destroyForcibly();
            }
            ClusterProcesses.stop(jm, tms);
        }
    }

    /** TaskManager tm-1, started the {@code start}th time, as scripts/cluster starts it. */
    private static Process taskManager(
            Path tmp, List<String> resources, List<String> ports, int start) throws Exception {
        String name = "tm-1" + (start == 0 ? "" : ".r" + start);
        return ClusterProcesses.start(
                ClusterProcesses.taskManager(
                        null, tmp.resolve(name + ".log"), resources, 1, ports, List.of()),
                tmp.resolve(name + ".out"),
                Map.of());
    }

    /** The id of the cluster's one job, once it runs. */
    private String runningJob(URI api, Process client, Path tmp) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (System.nanoTime() < deadline) {
            checkAlive(client, tmp);
            Object overview = get(api, "/jobs/overview");
            if (overview instanceof Map<?, ?> m && m.get("jobs") instanceof List<?> jobs) {
                for (Object j : jobs) {
                    if (j instanceof Map<?, ?> job && "RUNNING".equals(job.get("state"))) {
                        return String.valueOf(job.get("jid"));
                    }
                }
            }
            Thread.sleep(200);
        }
        throw new AssertionError(
                "no job ran within 2 minutes:\n"
                        + ClusterProcesses.tail(tmp.resolve("client.log"), 40));
    }

    /**
     * Waits until a checkpoint completed, after a restore that came after {@code since} when {@code
     * since} is not 0; when its last acknowledgement came (epoch millis).
     */
    private long awaitCompletedAfter(
            URI api, String job, long since, Process client, Path tmp, Duration bound)
            throws Exception {
        long deadline = since == 0 ? System.nanoTime() + bound.toNanos() : 0;
        while (true) {
            long now = System.currentTimeMillis();
            // The REST API caches checkpoint statistics for a few seconds: look a little longer.
            boolean late =
                    since == 0
                            ? System.nanoTime() > deadline
                            : now > since + bound.toMillis() + REST_CACHE.toMillis();
            if (late) {
                throw new AssertionError(
                        "no checkpoint completed within "
                                + bound
                                + (since == 0 ? "" : " of the kill")
                                + ":\n"
                                + ClusterProcesses.tail(tmp.resolve("jm.log"), 30));
            }
            checkAlive(client, tmp);
            if (get(api, "/jobs/" + job + "/checkpoints") instanceof Map<?, ?> stats
                    && stats.get("latest") instanceof Map<?, ?> latest
                    && latest.get("completed") instanceof Map<?, ?> completed) {
                long acked = ((Number) completed.get("latest_ack_timestamp")).longValue();
                long restored =
                        latest.get("restored") instanceof Map<?, ?> r
                                ? ((Number) r.get("restore_timestamp")).longValue()
                                : 0;
                if (since == 0 || (restored > since && acked > restored)) {
                    return acked;
                }
            }
            Thread.sleep(100);
        }
    }

    /** Waits until a checkpoint is under way (a minute at most). */
    private void awaitCheckpointUnderWay(URI api, String job, Process client, Path tmp)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (System.nanoTime() < deadline) {
            checkAlive(client, tmp);
            if (get(api, "/jobs/" + job + "/checkpoints") instanceof Map<?, ?> stats
                    && stats.get("counts") instanceof Map<?, ?> counts
                    && counts.get("in_progress") instanceof Number n
                    && n.intValue() > 0) {
                return;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("no checkpoint was under way within a minute");
    }

    private static void checkAlive(Process client, Path tmp) {
        assertThat(client.isAlive())
                .as(
                        "the job ended early:\n%s",
                        ClusterProcesses.tail(tmp.resolve("client.log"), 40))
                .isTrue();
    }

    /** The REST API's answer to {@code path}; null while it cannot answer. */
    private Object get(URI api, String path) throws InterruptedException {
        try {
            HttpResponse<String> answer =
                    http.send(
                            HttpRequest.newBuilder(api.resolve(path))
                                    .timeout(Duration.ofSeconds(5))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            return answer.statusCode() == 200 ? Json.parse(answer.body()) : null;
        } catch (java.io.IOException e) {
            return null;
        }
    }
}
