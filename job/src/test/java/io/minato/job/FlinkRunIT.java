package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * `flink run job/target/minato-job.jar train ...` as a user runs it: Flink's own command line
 * client in its own JVM, with Flink (and DJL, as a cluster's lib/ holds it) on its classpath but
 * not the job, submits the shaded jar to a running cluster (a MiniCluster behind its REST API), and
 * the job trains for real on two replicas there; the report comes back to the client.
 */
class FlinkRunIT {
    private static final List<String> PARENT_FIRST = List.of("ai.djl.", "org.bytedeco.");

    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .setConfiguration(clusterConfiguration())
                            .build());

    private static Configuration clusterConfiguration() {
        Configuration c = new Configuration();
        c.set(CoreOptions.ALWAYS_PARENT_FIRST_LOADER_PATTERNS_ADDITIONAL, PARENT_FIRST);
        return c;
    }

    @Test
    void shouldTrainWhenTheJarIsSubmittedWithFlinkRun(
            @InjectClusterClient ClusterClient<?> client, @TempDir Path tmp) throws Exception {
        Path jar = jobJar();
        Path data = generatedData(tmp);

        Path report = tmp.resolve("report.json");
        Path run = tmp.resolve("run");
        List<String> command =
                flinkCommand(
                        client,
                        tmp,
                        List.of(
                                "run",
                                jar.toString(),
                                "train",
                                "--data",
                                data.toString(),
                                "--patch",
                                "32",
                                "--epochs",
                                "1",
                                "--devices",
                                "cpu:2",
                                "--eval-cases",
                                "1",
                                "--report",
                                report.toString(),
                                "--run-dir",
                                run.toString()));
        String log = runToEnd(command, tmp);
        assertThat(log).contains("Job has been submitted with JobID");

        // 4 cases x 1 epoch in batches of 2 on 2 devices: one global step of both replicas.
        assertThat(report)
                .content()
                .contains(
                        "\"devices\": 2",
                        "\"steps\": 1",
                        "\"delivered\": 4",
                        "\"kind\": \"cpu\"",
                        "\"dice\": {\"mean\": ");
        assertThat(run.resolve("model-device-0").resolve("unet3d-0000.params")).isRegularFile();
    }

    @Test
    void shouldWriteItsOwnReportWhenSubmittedDetached(
            @InjectClusterClient ClusterClient<?> client, @TempDir Path tmp) throws Exception {
        Path jar = jobJar();
        Path data = generatedData(tmp);
        Path report = tmp.resolve("report.json");
        Path run = tmp.resolve("run");
        String log =
                runToEnd(
                        flinkCommand(
                                client,
                                tmp,
                                List.of(
                                        "run",
                                        "-d",
                                        jar.toString(),
                                        "train",
                                        "--data",
                                        data.toString(),
                                        "--patch",
                                        "32",
                                        "--epochs",
                                        "3",
                                        "--devices",
                                        "cpu:2",
                                        "--eval-cases",
                                        "1",
                                        "--accelerator",
                                        "simulated:10",
                                        "--timeout",
                                        "500",
                                        "--report",
                                        report.toString(),
                                        "--run-dir",
                                        run.toString())),
                        tmp);
        // The client submits and returns: no stack trace, one line saying where the report goes.
        assertThat(log)
                .contains("detached: when it finishes it writes report.json")
                .doesNotContain("Exception");

        // The job trains on without it and, as it finishes, writes the report itself.
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (!Files.exists(run.resolve("summary.txt")) && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertThat(run.resolve("report-error.txt")).doesNotExist();
        assertThat(run.resolve("summary.txt")).content().startsWith("minato: ");
        // 4 training cases x 3 epochs on 2 devices; what the operators counted (the timeout,
        // the case cache) came from their accumulator files.
        assertThat(report)
                .content()
                .contains(
                        "\"devices\": 2",
                        "\"delivered\": 12",
                        "\"timeout_ms\": 500.0",
                        "\"case_cache\": {\"hits\": ",
                        "\"start_s\": null",
                        "\"dice\": null");
        assertThat(run.resolve("report.json")).hasSameTextualContentAs(report);
        assertThat(Files.readAllLines(run.resolve("trace.csv"))).hasSize(1 + 12);
        assertThat(run.resolve(RunArgs.FINISHED)).exists();
        assertThat(run.resolve("prep-times.png")).isNotEmptyFile();
    }

    /**
     * A client configured for GPUs from Flink's external resource framework (as a cluster's
     * config.yaml would be) submitting to TaskManagers that have none: the job stops with one line
     * that says what to configure, not after training on the CPU unnoticed.
     */
    @Test
    void shouldSayInOneLineWhenTheTaskManagersHaveNoneOfTheGpusTheConfigurationPromises(
            @InjectClusterClient ClusterClient<?> client, @TempDir Path tmp) throws Exception {
        Path data = generatedData(tmp);
        Process p =
                start(
                        flinkCommand(
                                client,
                                tmp,
                                List.of(
                                        "run",
                                        "-Dexternal-resources=gpu",
                                        "-Dexternal-resource.gpu.amount=1",
                                        jobJar().toString(),
                                        "train",
                                        "--data",
                                        data.toString(),
                                        "--patch",
                                        "32",
                                        "--epochs",
                                        "1",
                                        "--eval-cases",
                                        "1",
                                        "--run-dir",
                                        tmp.resolve("run").toString())),
                        tmp);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        String log = Files.readString(tmp.resolve("client.log"));
        assertThat(p.exitValue()).as(log).isNotZero();
        assertThat(log)
                .as(log)
                .contains(
                        "error: the job trains on 1 GPU(s) from Flink's external resource"
                                + " framework, and all of them must be in one TaskManager, but"
                                + " the cluster's TaskManagers have at most 0: set"
                                + " external-resources: gpu and external-resource.gpu.amount: 1"
                                + " in the TaskManagers' config.yaml")
                .doesNotContain("\tat ");
    }

    /** Starts the client, its output into {@code tmp/client.log}. */
    private static Process start(List<String> command, Path tmp) throws java.io.IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("FLINK_CONF_DIR", tmp.resolve("conf").toString());
        pb.redirectOutput(tmp.resolve("client.log").toFile());
        return pb.start();
    }

    /** Flink's command line client with {@code args}, configured for the test's cluster. */
    private static List<String> flinkCommand(ClusterClient<?> client, Path tmp, List<String> args)
            throws java.io.IOException {
        return flinkCommand(java.net.URI.create(client.getWebInterfaceURL()), tmp, args);
    }

    /**
     * Flink's command line client with {@code args}, for the cluster whose REST API is {@code
     * rest}.
     */
    static List<String> flinkCommand(java.net.URI rest, Path tmp, List<String> args)
            throws java.io.IOException {
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
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions());
        command.add("-Dai.djl.offline=true");
        command.add("-Dlog4j.configurationFile=" + flinkConf().resolve("log4j-cli.properties"));
        command.add("-cp");
        command.add(clusterClasspath());
        command.add("org.apache.flink.client.cli.CliFrontend");
        command.addAll(args);
        return command;
    }

    /** Runs the client to its end (5 minutes at most) and returns its output; exit status 0. */
    static String runToEnd(List<String> command, Path tmp) throws Exception {
        Process p = start(command, tmp);
        boolean ended = p.waitFor(5, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String log = Files.readString(tmp.resolve("client.log"));
        assertThat(ended).as(log).isTrue();
        assertThat(p.exitValue()).as(log).isZero();
        return log;
    }

    /**
     * This JVM's classpath without the job (its modules' jars and class folders, picocli): Flink,
     * DJL and their dependencies.
     */
    /** The shaded job jar, as the package phase built it for this verify. */
    static Path jobJar() {
        Path jar = Path.of("target", "minato-job.jar").toAbsolutePath();
        assertThat(jar).as("built by the package phase").isRegularFile();
        return jar;
    }

    /** Five small generated cases in {@code tmp/data}: four to train on, one held out. */
    static Path generatedData(Path tmp) throws java.io.IOException {
        Path data = tmp.resolve("data");
        KitsLikeGenerator.builder().optCases(5).optScale(0.25).optSeed(4).build().generate(data);
        return data;
    }

    static String clusterClasspath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !e.contains("/info/picocli/"))
                .filter(e -> !Path.of(e).getFileName().toString().startsWith("minato-"))
                .filter(e -> !e.endsWith("/target/classes") && !e.endsWith("/target/test-classes"))
                .collect(Collectors.joining(File.pathSeparator));
    }

    /** The module openings Flink needs on Java 17+, as flink-conf/jvm-options lists them. */
    static List<String> jvmOptions() throws java.io.IOException {
        return Files.readAllLines(flinkConf().resolve("jvm-options")).stream()
                .map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .toList();
    }

    static Path flinkConf() {
        return Path.of("..", "flink-conf").toAbsolutePath().normalize();
    }
}
