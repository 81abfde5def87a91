package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Flink cluster's processes as its scripts start them, each a JVM of its own on Flink's jars (and
 * DJL's, as a cluster's lib/ holds them), configured from flink-conf/: for the integration tests
 * that deploy the job as a user does.
 */
final class ClusterProcesses {
    private ClusterProcesses() {}

    /**
     * A JVM on Flink's classpath, plus {@code jar} when not null (a cluster with the job's jar in
     * its lib/), logging to {@code log}.
     */
    static List<String> java(Path jar, Path log) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(FlinkRunIT.jvmOptions());
        command.add("-Dai.djl.offline=true");
        command.add("-Dlog.file=" + log);
        command.add(
                "-Dlog4j.configurationFile="
                        + FlinkRunIT.flinkConf().resolve("log4j-cluster.properties"));
        command.add("-cp");
        command.add(FlinkRunIT.clusterClasspath() + (jar == null ? "" : File.pathSeparator + jar));
        return command;
    }

    /** Starts {@code command}, its output into {@code out}, with {@code env} added. */
    static Process start(List<String> command, Path out, Map<String, String> env)
            throws IOException {
        ProcessBuilder process =
                new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile());
        process.environment().putAll(env);
        return process.start();
    }

    /**
     * What Flink's taskmanager.sh does (and scripts/cluster): a TaskManager's JVM flags and its
     * memory settings, worked out from the configuration by BashJavaUtils for a process of {@code
     * processSize}; two strings, the JVM's and the TaskManager's.
     */
    static List<String> taskManagerResources(Path tmp, Path jar, String processSize)
            throws Exception {
        List<String> resources = java(jar, tmp.resolve("bash-java-utils.log"));
        resources.add("org.apache.flink.runtime.util.bash.BashJavaUtils");
        resources.addAll(
                List.of(
                        "GET_TM_RESOURCE_PARAMS",
                        "--configDir",
                        FlinkRunIT.flinkConf().toString(),
                        "-D",
                        "taskmanager.memory.process.size=" + processSize));
        Process sizing = start(resources, tmp.resolve("sizing.out"), Map.of());
        assertThat(sizing.waitFor(2, TimeUnit.MINUTES)).isTrue();
        List<String> result =
                Files.readAllLines(tmp.resolve("sizing.out")).stream()
                        .filter(l -> l.startsWith("BASH_JAVA_UTILS_EXEC_RESULT:"))
                        .map(l -> l.substring("BASH_JAVA_UTILS_EXEC_RESULT:".length()).strip())
                        .toList();
        assertThat(result).as(Files.readString(tmp.resolve("sizing.out"))).hasSize(2);
        return result;
    }

    /**
     * A TaskManager's command: {@code resources} from {@link #taskManagerResources}, its resource
     * id {@code tm-K}, the cluster's {@code ports}, then {@code conf}.
     */
    static List<String> taskManager(
            Path jar,
            Path log,
            List<String> resources,
            int k,
            List<String> ports,
            List<String> conf)
            throws IOException {
        List<String> taskManager = java(jar, log);
        taskManager.addAll(1, Arrays.asList(resources.get(0).split("\\s+")));
        taskManager.add("org.apache.flink.runtime.taskexecutor.TaskManagerRunner");
        taskManager.addAll(List.of("--configDir", FlinkRunIT.flinkConf().toString()));
        taskManager.addAll(ports);
        taskManager.addAll(Arrays.asList(resources.get(1).split("\\s+")));
        taskManager.addAll(List.of("-D", "taskmanager.resource-id=tm-" + k));
        // The folder of its log (Flink adds tm_tm-K), not Flink's /tmp: any other cluster on the
        // host with a tm-K (scripts/cluster, a second test run) wipes /tmp/tm_tm-K when its
        // TaskManager starts.
        taskManager.addAll(
                List.of(
                        "-D",
                        "process.taskmanager.working-dir=" + log.toAbsolutePath().getParent()));
        taskManager.addAll(conf);
        return taskManager;
    }

    /** The last {@code lines} lines of {@code log}, for a failure's message; "" if none. */
    static String tail(Path log, int lines) {
        try {
            List<String> all = Files.readAllLines(log);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(" + e + ")";
        }
    }

    /** Stops every process, the TaskManagers waited for. */
    static void stop(Process jobManager, List<Process> taskManagers) throws InterruptedException {
        jobManager.destroyForcibly();
        for (Process tm : taskManagers) {
            tm.destroyForcibly();
            tm.waitFor(30, TimeUnit.SECONDS);
        }
        jobManager.waitFor(30, TimeUnit.SECONDS);
    }
}
