package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `flink run` to a session cluster of several TaskManagers, as a user runs it: a JobManager and two
 * TaskManagers, each a JVM of its own on Flink's jars only, and Flink's command line client
 * submitting the shaded jar. The job's classes, its operator coordinators included, load from the
 * jar in Flink's user-code class loaders; its trainer and workers spread over the two TaskManagers,
 * so samples cross between JVMs as bytes.
 */
class SessionClusterIT {
    @Test
    void shouldTrainEverySampleOnceOnTwoTaskManagersWhenSubmittedWithFlinkRun(@TempDir Path tmp)
            throws Exception {
        Map<String, Object> json =
                trainOnCluster(
                        tmp,
                        2,
                        ClusterProcesses.TWO_SLOTS,
                        "--devices",
                        "cpu:1",
                        "--workers",
                        "2",
                        "--accelerator",
                        "simulated:10");
        @SuppressWarnings("unchecked")
        Map<String, Object> workers = (Map<String, Object>) json.get("workers");
        assertThat(((Number) workers.get("sent_as_bytes")).longValue())
                .as("samples that crossed to the trainer's TaskManager as bytes")
                .isPositive();
        // Both TaskManagers in the report, each with its own CPU: the whole job, not the client's
        // JVM.
        List<Map<String, Object>> taskManagers = taskManagers(json);
        assertThat(taskManagers)
                .extracting(tm -> tm.get("id"))
                .containsExactlyInAnyOrder("tm-1", "tm-2");
        assertThat(taskManagers)
                .allSatisfy(
                        tm ->
                                assertThat(((Number) tm.get("process_cpu_s")).doubleValue())
                                        .isPositive());
        assertThat(taskManagers.stream().mapToInt(tm -> ((Number) tm.get("trainers")).intValue()))
                .as("trainers per TaskManager")
                .containsExactlyInAnyOrder(0, 1);
    }

    /**
     * Two devices in synchronous data parallelism whose trainers Flink puts in two TaskManagers
     * (three TaskManagers of one slot: one preparing, one trainer in each of the others): their
     * replica group spans two JVMs, and they train as one model.
     */
    @Test
    void shouldTrainOneModelWithTheTwoDevicesReplicasInDifferentTaskManagers(@TempDir Path tmp)
            throws Exception {
        Map<String, Object> json =
                trainOnCluster(
                        tmp,
                        3,
                        List.of("-D", "taskmanager.numberOfTaskSlots=1"),
                        "--devices",
                        "cpu:2",
                        "--workers",
                        "1",
                        "--slow-workers",
                        "1",
                        "--width",
                        "0.125");
        List<Map<String, Object>> taskManagers = taskManagers(json);
        assertThat(taskManagers.stream().mapToInt(tm -> ((Number) tm.get("trainers")).intValue()))
                .as("trainers per TaskManager")
                .containsExactlyInAnyOrder(0, 1, 1);
        @SuppressWarnings("unchecked")
        Map<String, Object> loss = (Map<String, Object>) json.get("loss");
        assertThat(((Number) loss.get("last")).doubleValue()).isFinite();
    }

    /**
     * Starts a JobManager and {@code taskManagers} TaskManagers with {@code slots}, submits {@code
     * train} on the generated data for 2 epochs with {@code flink run}, checks that every (epoch,
     * index) was trained once, and gives the report.
     */
    private static Map<String, Object> trainOnCluster(
            Path tmp, int taskManagers, List<String> slots, String... train) throws Exception {
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
        List<String> resources = ClusterProcesses.taskManagerResources(tmp, null, "1536m");
        Process jm = ClusterProcesses.start(jobManager, tmp.resolve("jm.out"), Map.of());
        List<Process> tms = new ArrayList<>();
        try {
            for (int k = 1; k <= taskManagers; k++) {
                tms.add(
                        ClusterProcesses.start(
                                ClusterProcesses.taskManager(
                                        null,
                                        tmp.resolve("tm-" + k + ".log"),
                                        resources,
                                        k,
                                        ports,
                                        slots),
                                tmp.resolve("tm-" + k + ".out"),
                                Map.of()));
            }
            Path run = tmp.resolve("run");
            Path report = tmp.resolve("report.json");
            Path trace = tmp.resolve("trace.csv");
            List<String> args = new ArrayList<>(List.of("run", jar.toString()));
            List<String> options = new ArrayList<>(List.of(train));
            options.addAll(
                    List.of(
                            "--report",
                            report.toString(),
                            "--trace",
                            trace.toString(),
                            "--run-dir",
                            run.toString()));
            args.addAll(ClusterProcesses.trainGenerated(data, 2, options.toArray(String[]::new)));
            String log =
                    ClusterProcesses.runToEnd(
                            ClusterProcesses.flinkCommand(
                                    URI.create("http://localhost:" + rest), tmp, args),
                            tmp);
            assertThat(log).contains("Job has been submitted with JobID");

            // 4 training cases x 2 epochs: every (epoch, index) once.
            assertThat(report).content().contains("\"delivered\": 8");
            assertThat(MiniClusterJobs.trainedOnce(trace)).hasSize(8);
            @SuppressWarnings("unchecked")
            Map<String, Object> json = (Map<String, Object>) Json.parse(Files.readString(report));
            return json;
        } finally {
            ClusterProcesses.stop(jm, tms);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> taskManagers(Map<String, Object> report) {
        return (List<Map<String, Object>>) report.get("task_managers");
    }
}
