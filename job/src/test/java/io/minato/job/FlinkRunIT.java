package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.generate.KitsLikeGenerator;
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
        Path jar = Path.of("target", "minato-job.jar").toAbsolutePath();
        assertThat(jar).as("built by the package phase").isRegularFile();
        Path data = tmp.resolve("data");
        KitsLikeGenerator.builder().optCases(5).optScale(0.25).optSeed(4).build().generate(data);

        // The client's configuration: where the cluster's REST API listens.
        java.net.URI rest = java.net.URI.create(client.getWebInterfaceURL());
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

        Path report = tmp.resolve("report.json");
        Path run = tmp.resolve("run");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions());
        command.add("-Dai.djl.offline=true");
        command.add("-Dlog4j.configurationFile=" + flinkConf().resolve("log4j-cli.properties"));
        command.add("-cp");
        command.add(clusterClasspath());
        command.addAll(
                List.of(
                        "org.apache.flink.client.cli.CliFrontend",
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
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("FLINK_CONF_DIR", conf.toString());
        pb.redirectOutput(tmp.resolve("client.log").toFile());
        Process p = pb.start();
        boolean ended = p.waitFor(5, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String log = Files.readString(tmp.resolve("client.log"));
        assertThat(ended).as(log).isTrue();
        assertThat(p.exitValue()).as(log).isZero();
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

    /**
     * This JVM's classpath without the job (its modules' jars and class folders, picocli): Flink,
     * DJL and their dependencies.
     */
    private static String clusterClasspath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !e.contains("/info/picocli/"))
                .filter(e -> !Path.of(e).getFileName().toString().startsWith("minato-"))
                .filter(e -> !e.endsWith("/target/classes") && !e.endsWith("/target/test-classes"))
                .collect(Collectors.joining(File.pathSeparator));
    }

    /** The module openings Flink needs on Java 17+, as flink-conf/jvm-options lists them. */
    private static List<String> jvmOptions() throws java.io.IOException {
        return Files.readAllLines(flinkConf().resolve("jvm-options")).stream()
                .map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .toList();
    }

    private static Path flinkConf() {
        return Path.of("..", "flink-conf").toAbsolutePath().normalize();
    }
}
