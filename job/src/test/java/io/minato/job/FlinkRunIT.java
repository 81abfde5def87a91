package io.minato.job;

import static io.minato.job.ClusterProcesses.generatedData;
import static io.minato.job.ClusterProcesses.jobJar;
import static io.minato.job.ClusterProcesses.runToEnd;
import static io.minato.job.ClusterProcesses.startClient;
import static io.minato.job.ClusterProcesses.trainGenerated;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
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
            MiniClusterJobs.cluster(1, 4, clusterConfiguration());

    private static Configuration clusterConfiguration() {
        Configuration c = new Configuration();
        c.set(CoreOptions.ALWAYS_PARENT_FIRST_LOADER_PATTERNS_ADDITIONAL, PARENT_FIRST);
        return c;
    }

    @Test
    void shouldTrainWhenTheJarIsSubmittedWithFlinkRun(
            @InjectClusterClient ClusterClient<?> client, @TempDir Path tmp) throws Exception {
        Path data = generatedData(tmp);
        Path report = tmp.resolve("report.json");
        Path run = tmp.resolve("run");
        List<String> train =
                trainGenerated(
                        data,
                        1,
                        "--devices",
                        "cpu:2",
                        "--report",
                        report.toString(),
                        "--run-dir",
                        run.toString());
        List<String> command = flinkCommand(client, tmp, flinkRun(List.of(), train));
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
        Path data = generatedData(tmp);
        Path report = tmp.resolve("report.json");
        Path run = tmp.resolve("run");
        List<String> train =
                trainGenerated(
                        data,
                        3,
                        "--devices",
                        "cpu:2",
                        "--timeout",
                        "500",
                        "--report",
                        report.toString(),
                        "--run-dir",
                        run.toString());
        String log = runToEnd(flinkCommand(client, tmp, flinkRun(List.of("-d"), train)), tmp);
        // The client submits and returns: no stack trace, one line saying where the report goes.
        assertThat(log)
                .contains("detached: when it finishes it writes report.json")
                .doesNotContain("Exception");

        // The job trains on without it and, as it finishes, scores the saved model on the
        // held-out case and writes the report itself.
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (!Files.exists(run.resolve("summary.txt")) && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertThat(run.resolve("report-error.txt")).doesNotExist();
        assertThat(run.resolve(DetachedReport.EVALUATION_ERROR)).doesNotExist();
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
                        "\"dice\": {\"mean\": ");
        assertThat(run.resolve("report.json")).hasSameTextualContentAs(report);
        assertThat(Files.readAllLines(run.resolve("trace.csv"))).hasSize(1 + 12);
        assertThat(run.resolve(RunArgs.FINISHED)).exists();
        assertThat(run.resolve("prep-times.png")).isNotEmptyFile();
        assertThat(run.resolve("usage.png")).as("busy over time, from the traces").isNotEmptyFile();
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
        List<String> gpus = List.of("-Dexternal-resources=gpu", "-Dexternal-resource.gpu.amount=1");
        List<String> train = trainGenerated(data, 1, "--run-dir", tmp.resolve("run").toString());
        Process p = startClient(flinkCommand(client, tmp, flinkRun(gpus, train)), tmp);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        String log = Files.readString(tmp.resolve("client.log"));
        assertThat(p.exitValue()).as(log).isNotZero();
        assertThat(log)
                .as(log)
                .contains(
                        "error: the job trains on 1 GPU(s) from Flink's external resource"
                                + " framework, but the cluster's TaskManagers have none: start"
                                + " TaskManagers with external-resources: gpu and"
                                + " external-resource.gpu.amount in their config.yaml, or give"
                                + " --devices cpu")
                .doesNotContain("\tat ");
    }

    /** Flink's command line client with {@code args}, configured for the test's cluster. */
    private static List<String> flinkCommand(ClusterClient<?> client, Path tmp, List<String> args)
            throws IOException {
        return ClusterProcesses.flinkCommand(URI.create(client.getWebInterfaceURL()), tmp, args);
    }

    /** `flink run {@code runOptions} minato-job.jar {@code train}`. */
    private static List<String> flinkRun(List<String> runOptions, List<String> train) {
        List<String> args = new ArrayList<>(List.of("run"));
        args.addAll(runOptions);
        args.add(jobJar().toString());
        args.addAll(train);
        return args;
    }
}
