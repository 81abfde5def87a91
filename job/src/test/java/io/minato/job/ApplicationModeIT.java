package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink's application mode, as a user deploys it: a standalone application cluster whose JobManager
 * runs {@code Main train ...} itself, and a TaskManager, each a JVM of its own with the job's jar
 * on its classpath. {@code main} must not exit the JobManager's process (it did: System.exit after
 * submitting), the job writes its own report as a detached one does, and the cluster ends with the
 * application SUCCEEDED.
 */
class ApplicationModeIT {
    @Test
    void shouldTrainAndReportWhenTheJobManagerRunsMain(@TempDir Path tmp) throws Exception {
        Path jar = FlinkRunIT.jobJar();
        Path data = FlinkRunIT.generatedData(tmp);
        Path run = tmp.resolve("run");
        Path report = tmp.resolve("report.json");
        List<String> ports =
                List.of(
                        "-D",
                        "rest.port=" + FlinkSetup.freePort(),
                        "-D",
                        "jobmanager.rpc.port=" + FlinkSetup.freePort());

        List<String> jobManager = java(jar, tmp.resolve("jm.log"));
        jobManager.add(
                "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint");
        jobManager.addAll(List.of("--configDir", flinkConf().toString()));
        jobManager.addAll(ports);
        jobManager.addAll(List.of("-D", "jobmanager.memory.process.size=1g"));
        jobManager.addAll(
                List.of(
                        "--job-classname",
                        Main.class.getName(),
                        "train",
                        "--data",
                        data.toString(),
                        "--patch",
                        "32",
                        "--epochs",
                        "2",
                        "--eval-cases",
                        "1",
                        "--accelerator",
                        "simulated:10",
                        "--no-web-ui",
                        "--run-dir",
                        run.toString(),
                        "--report",
                        report.toString()));
        // What Flink's taskmanager.sh does (and scripts/cluster): the TaskManager's JVM flags
        // and memory settings, worked out from the configuration by BashJavaUtils.
        List<String> resources = java(jar, tmp.resolve("bash-java-utils.log"));
        resources.add("org.apache.flink.runtime.util.bash.BashJavaUtils");
        resources.addAll(
                List.of(
                        "GET_TM_RESOURCE_PARAMS",
                        "--configDir",
                        flinkConf().toString(),
                        "-D",
                        "taskmanager.memory.process.size=2g"));
        Process sizing = start(resources, tmp.resolve("sizing.out"));
        assertThat(sizing.waitFor(2, TimeUnit.MINUTES)).isTrue();
        List<String> result =
                Files.readAllLines(tmp.resolve("sizing.out")).stream()
                        .filter(l -> l.startsWith("BASH_JAVA_UTILS_EXEC_RESULT:"))
                        .map(l -> l.substring("BASH_JAVA_UTILS_EXEC_RESULT:".length()).strip())
                        .toList();
        assertThat(result).as(Files.readString(tmp.resolve("sizing.out"))).hasSize(2);

        List<String> taskManager = java(jar, tmp.resolve("tm.log"));
        taskManager.addAll(1, Arrays.asList(result.get(0).split("\\s+")));
        taskManager.add("org.apache.flink.runtime.taskexecutor.TaskManagerRunner");
        taskManager.addAll(List.of("--configDir", flinkConf().toString()));
        taskManager.addAll(ports);
        taskManager.addAll(Arrays.asList(result.get(1).split("\\s+")));

        Process jm = start(jobManager, tmp.resolve("jm.out"));
        Process tm = start(taskManager, tmp.resolve("tm.out"));
        try {
            boolean ended = jm.waitFor(4, TimeUnit.MINUTES);
            String out = Files.readString(tmp.resolve("jm.out"));
            assertThat(ended)
                    .as(out + "\n--- TaskManager:\n" + Files.readString(tmp.resolve("tm.out")))
                    .isTrue();
            assertThat(jm.exitValue()).as(out).isZero();
            assertThat(Files.readString(tmp.resolve("jm.log")))
                    .contains(
                            "Shutting StandaloneApplicationClusterEntryPoint down with"
                                    + " application status SUCCEEDED");
        } finally {
            jm.destroyForcibly();
            tm.destroyForcibly();
            tm.waitFor(30, TimeUnit.SECONDS);
        }
        // 4 training cases x 2 epochs, every one once, in the report the job wrote itself.
        assertThat(report).content().contains("\"delivered\": 8", "\"dice\": null");
        assertThat(Files.readAllLines(run.resolve("trace.csv"))).hasSize(1 + 8);
        assertThat(run.resolve(RunArgs.FINISHED)).exists();
    }

    /** A JVM on Flink's and the job's classpath, as a cluster with the jar in its lib/ has. */
    private static List<String> java(Path jar, Path log) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(FlinkRunIT.jvmOptions());
        command.add("-Dai.djl.offline=true");
        command.add("-Dlog.file=" + log);
        command.add("-Dlog4j.configurationFile=" + flinkConf().resolve("log4j-cluster.properties"));
        command.add("-cp");
        command.add(FlinkRunIT.clusterClasspath() + File.pathSeparator + jar);
        return command;
    }

    private static Process start(List<String> command, Path out) throws IOException {
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(out.toFile())
                .start();
    }

    private static Path flinkConf() {
        return FlinkRunIT.flinkConf();
    }
}
