package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A Flink cluster's processes as its scripts start them, and Flink's command line client, each a
 * JVM of its own on Flink's jars (and DJL's, as a cluster's lib/ holds them), configured from
 * flink-conf/; the job's jar and the generated data they train on: for the integration tests that
 * deploy the job as a user does.
 */
final class ClusterProcesses {
    private ClusterProcesses() {}

    /** A TaskManager's settings for two slots, tasks spread over the TaskManagers slot by slot. */
    static final List<String> TWO_SLOTS =
            List.of(
                    "-D",
                    "taskmanager.numberOfTaskSlots=2",
                    "-D",
                    "taskmanager.load-balance.mode=SLOTS");

    /**
     * A JVM on Flink's classpath, plus {@code jar} when not null (a cluster with the job's jar in
     * its lib/), logging to {@code log}.
     */
    static List<String> java(Path jar, Path log) throws IOException {
        return jvm(jar, "log4j-cluster.properties", "-Dlog.file=" + log);
    }

    /**
     * A JVM on Flink's classpath (plus {@code jar} when not null) with flink-conf/'s module
     * openings, logging as flink-conf/{@code log4jProperties} says, with {@code properties} added.
     */
    private static List<String> jvm(Path jar, String log4jProperties, String... properties)
            throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions());
        command.add("-Dai.djl.offline=true");
        // The test JVM's temporary folder (the module's target/), not /tmp: Flink's io.tmp.dirs,
        // its RPC jar and snappy's library follow it, and a killed process leaves them there.
        command.add("-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"));
        command.addAll(Arrays.asList(properties));
        command.add("-Dlog4j.configurationFile=" + flinkConf().resolve(log4jProperties));
        command.add("-cp");
        command.add(clusterClasspath() + (jar == null ? "" : File.pathSeparator + jar));
        return command;
    }

    /**
     * Flink's command line client with {@code args}, for the cluster whose REST API is {@code
     * rest}; its configuration in {@code tmp/conf}.
     */
    static List<String> flinkCommand(URI rest, Path tmp, List<String> args) throws IOException {
        // The client's configuration: where the cluster's REST API listens.
        Path conf = Files.createDirectories(tmp.resolve("conf"));
        Files.writeString(
                conf.resolve("config.yaml"),
                "rest.address: "
                        + rest.getHost()
                        + "\nrest.port: "
                        + rest.getPort()
                        + "\nclassloader.parent-first-patterns.additional: [\"ai.djl.\","
                        + " \"org.bytedeco.\"]\n",
                StandardCharsets.UTF_8);
        List<String> command = jvm(null, "log4j-cli.properties");
        command.add("org.apache.flink.client.cli.CliFrontend");
        command.addAll(args);
        return command;
    }

    /** Starts the client of {@link #flinkCommand}, its output into {@code tmp/client.log}. */
    static Process startClient(List<String> command, Path tmp) throws IOException {
        return start(
                command,
                tmp.resolve("client.log"),
                Map.of("FLINK_CONF_DIR", tmp.resolve("conf").toString()));
    }

    /** Runs the client to its end (5 minutes at most) and returns its output; exit status 0. */
    static String runToEnd(List<String> command, Path tmp) throws Exception {
        Process p = startClient(command, tmp);
        boolean ended = p.waitFor(5, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String log = Files.readString(tmp.resolve("client.log"));
        assertThat(ended).as(log).isTrue();
        assertThat(p.exitValue()).as(log).isZero();
        return log;
    }

    /** The shaded job jar, as the package phase built it for this verify. */
    static Path jobJar() {
        Path jar = Path.of("target", "minato-job.jar").toAbsolutePath();
        assertThat(jar).as("built by the package phase").isRegularFile();
        return jar;
    }

    /** Five small generated cases in {@code tmp/data}: four to train on, one held out. */
    static Path generatedData(Path tmp) throws IOException {
        Path data = tmp.resolve("data");
        KitsLikeGenerator.builder().optCases(5).optScale(0.25).optSeed(4).build().generate(data);
        return data;
    }

    /**
     * Main's train command on {@link #generatedData}: patches of 32, {@code epochs} epochs, the
     * held-out case evaluated, then {@code options}.
     */
    static List<String> trainGenerated(Path data, int epochs, String... options) {
        List<String> train = new ArrayList<>();
        train.addAll(
                List.of(
                        "train",
                        "--data",
                        data.toString(),
                        "--patch",
                        "32",
                        "--epochs",
                        Integer.toString(epochs),
                        "--eval-cases",
                        "1"));
        train.addAll(Arrays.asList(options));
        return train;
    }

    /**
     * This JVM's classpath without the job (its modules' jars and class folders, picocli): Flink,
     * DJL and their dependencies.
     */
    static String clusterClasspath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !e.contains("/info/picocli/"))
                .filter(e -> !Path.of(e).getFileName().toString().startsWith("minato-"))
                .filter(e -> !e.endsWith("/target/classes") && !e.endsWith("/target/test-classes"))
                .collect(Collectors.joining(File.pathSeparator));
    }

    /** The module openings Flink needs on Java 17+, as flink-conf/jvm-options lists them. */
    static List<String> jvmOptions() throws IOException {
        return Files.readAllLines(flinkConf().resolve("jvm-options")).stream()
                .map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .toList();
    }

    static Path flinkConf() {
        return Path.of("..", "flink-conf").toAbsolutePath().normalize();
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
                        flinkConf().toString(),
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
        taskManager.addAll(List.of("--configDir", flinkConf().toString()));
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
