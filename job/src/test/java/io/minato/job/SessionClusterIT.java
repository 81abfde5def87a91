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
            for (int k = 1; k <= 2; k++) {
                tms.add(
                        ClusterProcesses.start(
                                ClusterProcesses.taskManager(
                                        null,
                                        tmp.resolve("tm-" + k + ".log"),
                                        resources,
                                        k,
                                        ports,
                                        ClusterProcesses.TWO_SLOTS),
                                tmp.resolve("tm-" + k + ".out"),
                                Map.of()));
            }
            Path run = tmp.resolve("run");
            Path report = tmp.resolve("report.json");
            Path trace = tmp.resolve("trace.csv");
            List<String> args = new ArrayList<>(List.of("run", jar.toString()));
            args.addAll(
                    ClusterProcesses.trainGenerated(
                            data,
                            2,
                            "--devices",
                            "cpu:1",
                            "--workers",
                            "2",
                            "--accelerator",
                            "simulated:10",
                            "--report",
                            report.toString(),
                            "--trace",
                            trace.toString(),
                            "--run-dir",
                            run.toString()));
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
            @SuppressWarnings("unchecked")
            Map<String, Object> workers = (Map<String, Object>) json.get("workers");
            assertThat(((Number) workers.get("sent_as_bytes")).longValue())
                    .as("samples that crossed to the trainer's TaskManager as bytes")
                    .isPositive();
            // Both TaskManagers in the report, each with its own CPU: the whole job, not the
            // client's JVM.
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> taskManagers =
                    (List<Map<String, Object>>) json.get("task_managers");
            assertThat(taskManagers)
                    .extracting(tm -> tm.get("id"))
                    .containsExactlyInAnyOrder("tm-1", "tm-2");
            assertThat(taskManagers)
                    .allSatisfy(
                            tm ->
                                    assertThat(((Number) tm.get("process_cpu_s")).doubleValue())
                                            .isPositive());
            assertThat(
                            taskManagers.stream()
                                    .mapToInt(tm -> ((Number) tm.get("trainers")).intValue())
                                    .sum())
                    .isEqualTo(1);
        } finally {
            ClusterProcesses.stop(jm, tms);
        }
    }
}
