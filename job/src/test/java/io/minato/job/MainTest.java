package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MainTest {
    @TempDir static Path data;

    @BeforeAll
    static void generate() throws Exception {
        KitsLikeGenerator.builder().optCases(6).optScale(0.1).optSeed(3).build().generate(data);
    }

    @Test
    void shouldProfileEveryTrainingSampleOverallAndPerTransform() {
        Run run =
                run(
                        "profile",
                        "--data",
                        data.toString(),
                        "--patch",
                        "8",
                        "--eval-cases",
                        "1",
                        "--epochs",
                        "3");
        assertThat(run.status).as(run.err).isZero();
        assertThat(run.out)
                .contains("5 training cases (1 held out, 0 quarantined), patch 8^3")
                .containsPattern("prepare, CPU\\s+15 ")
                .contains("RandBalancedCrop+Cast", "RandFlip", "RandomBrightness", "GaussianNoise")
                .containsPattern("prepare, foreground-centred crop \\(CPU\\)\\s+\\d+ ")
                .containsPattern("prepare, uniform crop \\(CPU\\)\\s+\\d+ ")
                .containsPattern("prepare, epochs 2\\+ \\(CPU\\)\\s+10 ")
                .containsPattern("tail: max / p50 = .*; slowest sample case_\\d{5} \\(epoch");
    }

    @Test
    void shouldStopOnABadCaseWithOneLineNamingTheFile() throws Exception {
        Path bad = copyWithTruncatedLabel("bad-fail");
        Run run = run("profile", "--data", bad.toString(), "--patch", "8", "--eval-cases", "1");
        assertThat(run.status).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err.strip())
                .doesNotContain("\n")
                .contains("case_00002_y.npy")
                .contains("the file holds");
        assertThat(run.out).isEmpty();
    }

    @Test
    void shouldSkipABadCaseAndCountItAsQuarantinedWhenAsked() throws Exception {
        Path bad = copyWithTruncatedLabel("bad-skip");
        Run run =
                run(
                        "profile",
                        "--data",
                        bad.toString(),
                        "--patch",
                        "8",
                        "--eval-cases",
                        "1",
                        "--on-bad-sample",
                        "skip");
        assertThat(run.status).as(run.err).isZero();
        assertThat(run.out).contains("4 training cases (1 held out, 1 quarantined)");
        assertThat(run.err).contains("skipped: ").contains("case_00002_y.npy");
    }

    @Test
    void shouldRefuseAPatchLargerThanTheVolumesBeforePreparingAnything() {
        Run run = run("profile", "--data", data.toString(), "--patch", "128", "--eval-cases", "1");
        assertThat(run.status).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err).contains("smaller than the patch 128x128x128; use a smaller --patch");
    }

    /** Bad input inside a failed job, as Flink wraps and serializes it: its line, no trace. */
    @Test
    void shouldFindBadInputAmongTheCausesOfAFailedJob() {
        Exception fromJob =
                new RuntimeException(
                        "Job execution failed.",
                        new IllegalStateException(
                                "Recovery is suppressed",
                                new org.apache.flink.util.SerializedThrowable(
                                        new io.minato.npy.NpyFormatException(
                                                Path.of("/data/case_00005_x.npy"),
                                                "header claims 2320000 bytes of data but the file"
                                                        + " holds 872 (truncated file?)"))));
        assertThat(Failure.of(fromJob).badInput())
                .isEqualTo(
                        "/data/case_00005_x.npy: header claims 2320000 bytes of data but the file"
                                + " holds 872 (truncated file?)");
        assertThat(Failure.of(new RuntimeException("x", new IllegalStateException("y"))).badInput())
                .isNull();
    }

    /** Flink's word for a job whose restart strategy allows no more restarts, however wrapped. */
    @Test
    void shouldTellAJobWhoseRestartsRanOutFromOtherFailures() {
        Exception exhausted =
                new RuntimeException(
                        "Job execution failed.",
                        new org.apache.flink.runtime.JobException(
                                "Recovery is suppressed by"
                                        + " ExponentialDelayRestartBackoffTimeStrategy(...)",
                                new org.apache.flink.util.SerializedThrowable(
                                        new IllegalStateException("injected device fault"))));
        assertThat(Failure.of(exhausted).restartsExhausted()).isTrue();
        Exception noCheckpoint =
                new RuntimeException(
                        "Job execution failed.",
                        new org.apache.flink.runtime.JobException(
                                "The failure is not recoverable",
                                new org.apache.flink.util.SerializedThrowable(
                                        new io.minato.trainer.RestartsRunOut(
                                                "4 failures since the last completed checkpoint",
                                                null))));
        assertThat(Failure.of(noCheckpoint).restartsExhausted()).isTrue();
        assertThat(
                        Failure.of(new RuntimeException("x", new IllegalStateException()))
                                .restartsExhausted())
                .isFalse();
    }

    /** What an attached client gets from a job that failed for good with {@code cause}. */
    private static Exception failedJob(String why, Throwable cause) {
        return new org.apache.flink.runtime.client.JobExecutionException(
                new org.apache.flink.api.common.JobID(),
                "Job execution failed.",
                new org.apache.flink.runtime.JobException(
                        why, new org.apache.flink.util.SerializedThrowable(cause)));
    }

    /**
     * A trainer whose CPU computes convolutions wrong ends the job without restarts (each attempt
     * would compute the same), and the console has its one line: what is wrong and what to set.
     */
    @Test
    void shouldSayInOneLineThatTheCpuComputesConvolutionsWrong() {
        String line =
                "libtorch computes wrong convolutions on this CPU: the input gradient of a 3-d"
                        + " convolution of 4 to 3 channels is off by 92 %";
        Exception failedJob =
                failedJob(
                        "Recovery is suppressed by NoRestartBackoffTimeStrategy",
                        new org.apache.flink.runtime.execution.SuppressRestartsException(
                                new io.minato.trainer.ConvolutionCheck.Wrong(line)));
        java.io.StringWriter said = new java.io.StringWriter();
        assertThat(Failure.report(failedJob, new java.io.PrintWriter(said, true))).isEqualTo(1);
        assertThat(said.toString().lines()).containsExactly("error: " + line);
    }

    /**
     * A job that failed for good says so in one line on the console, under flink run as on the
     * embedded run, and keeps the whole trace in the run's log; the count of restarts that ran out
     * is the trainers' coordinator's (failures since the last checkpoint).
     */
    @Test
    void shouldSayInOneLineThatTheJobFailedAndKeepTheTraceInTheRunsLog(@TempDir Path runDir)
            throws Exception {
        Path log = runDir.resolve("minato.log");
        Exception failedJob =
                failedJob(
                        "The failure is not recoverable",
                        new IllegalStateException("injected lasting fault"));
        String before = System.getProperty(RunLog.PROPERTY);
        System.setProperty(RunLog.PROPERTY, log.toString());
        java.io.StringWriter said = new java.io.StringWriter();
        try {
            assertThat(Failure.report(failedJob, new java.io.PrintWriter(said, true))).isEqualTo(1);
        } finally {
            if (before == null) {
                System.clearProperty(RunLog.PROPERTY);
            } else {
                System.setProperty(RunLog.PROPERTY, before);
            }
        }
        assertThat(said.toString().lines())
                .containsExactly(
                        "error: the job failed: java.lang.IllegalStateException: injected lasting"
                                + " fault; the whole trace is in "
                                + log);
        assertThat(log)
                .content()
                .contains("the job failed for good:", "JobExecutionException", "\tat ");
    }

    /** Every command's help formats cleanly (an unescaped '%' once made picocli warn). */
    @Test
    void shouldPrintEveryHelpWithoutAWarning() {
        for (String command :
                List.of("train", "evaluate", "generate", "profile", "step-time", "plot")) {
            Run run = run(command, "--help");
            assertThat(run.status).as(command).isZero();
            assertThat(run.out).as(command).contains("Usage:");
            assertThat(run.out + run.err).as(command).doesNotContain("WARN");
        }
    }

    @Test
    void shouldAnswerAnUnknownOptionWithOneLineAndUsageStatus() {
        Run run = run("profile", "--no-such-option");
        assertThat(run.status).isEqualTo(2);
        assertThat(run.err.strip()).doesNotContain("\n").contains("--no-such-option");
    }

    /** /dev/full answers every write with ENOSPC: the disk filling up under a running job. */
    @Test
    void shouldStopOnAFullDiskWithOneLineNamingTheFileAndHowToGoOn(@TempDir Path dir)
            throws Exception {
        Path run = dir.resolve("run");
        Run r = run(fullDiskRun(data, run).toArray(String[]::new));
        assertThat(r.status).as(r.err).isEqualTo(1);
        assertThat(r.err.strip().lines().reduce((a, b) -> b).orElse(""))
                .isEqualTo(
                        "error: "
                                + run.resolve("trace-device-0.csv")
                                + ": No space left on device; what the run wrote stays in "
                                + run
                                + ": free space, then continue it with --resume "
                                + run);
        assertThat(r.err).doesNotContain("JobExecutionException");
    }

    /**
     * The arguments of a one-epoch run into {@code run}, whose device-0 trace is created as a link
     * to /dev/full, which answers every write with ENOSPC: the disk filling up under the job.
     */
    static List<String> fullDiskRun(Path data, Path run) throws java.io.IOException {
        Files.createDirectories(run);
        Files.createSymbolicLink(run.resolve("trace-device-0.csv"), Path.of("/dev/full"));
        return List.of(
                "train",
                "--data",
                data.toString(),
                "--patch",
                "16",
                "--epochs",
                "1",
                "--accelerator",
                "simulated:1",
                "--no-web-ui",
                // Every attempt meets the same full disk: the default's ten restarts would only
                // make the run slower.
                "--restart-attempts",
                "2",
                "--run-dir",
                run.toString());
    }

    @Test
    void shouldFindAFullDiskAmongTheCausesPreferringTheMessageThatNamesAPath() {
        var bare = new java.io.IOException("No space left on device");
        var named = new java.io.IOException("/r/trace-device-1.csv: No space left on device", bare);
        var step =
                new java.io.IOException(
                        "device 1: training step 4 failed: java.io.IOException: "
                                + named.getMessage(),
                        named);
        assertThat(Failure.of(new RuntimeException("job failed", step)).diskFull())
                .isEqualTo("/r/trace-device-1.csv: No space left on device");
        assertThat(Failure.of(new RuntimeException("x", bare)).diskFull())
                .isEqualTo("No space left on device");
        assertThat(Failure.of(new RuntimeException("x", new IllegalStateException("y"))).diskFull())
                .isNull();
    }

    /**
     * Flink's channel state writer meets the full disk first and dies; the task's failure is a
     * later "not running" that carries the first one as suppressed.
     */
    @Test
    void shouldFindAFullDiskThatALaterFailureOnlySuppressed() {
        var first = new java.io.IOException("/r/checkpoints/chk-4/x: No space left on device");
        var notRunning = new IllegalStateException("not running");
        notRunning.addSuppressed(first);
        assertThat(Failure.of(new RuntimeException("job failed", notRunning)).diskFull())
                .isEqualTo("/r/checkpoints/chk-4/x: No space left on device");
    }

    /** The failure Flink 2.3 gives for a checkpoint of a dataflow with other operators. */
    @Test
    void shouldTellACheckpointOfAnotherDataflowFromOtherFailures() {
        var mismatch =
                new IllegalStateException(
                        "Failed to rollback to checkpoint/savepoint file:/r/checkpoints/j/chk-11."
                                + " Cannot map checkpoint/savepoint state for operator"
                                + " f56927c740715d6ee8aa216ab4dd0459 to the new program, because"
                                + " the operator is not available in the new program.");
        var wrapped =
                new RuntimeException(
                        "Could not start the JobMaster.",
                        new java.util.concurrent.CompletionException(mismatch));
        assertThat(Failure.of(wrapped).checkpointMismatch()).isTrue();
        assertThat(
                        Failure.of(new RuntimeException("x", new IllegalStateException("y")))
                                .checkpointMismatch())
                .isFalse();
    }

    @Test
    void shouldTellACancelledJobFromOtherFailuresAlsoWhenFlinkSerializedTheCause() {
        var cancelled =
                new org.apache.flink.runtime.client.JobCancellationException(
                        new org.apache.flink.api.common.JobID(), "Job was cancelled.", null);
        assertThat(Failure.of(new RuntimeException("x", cancelled)).cancelled()).isTrue();
        assertThat(
                        Failure.of(
                                        new RuntimeException(
                                                "x",
                                                new org.apache.flink.util.SerializedThrowable(
                                                        cancelled)))
                                .cancelled())
                .isTrue();
        assertThat(Failure.of(new RuntimeException("x", new IllegalStateException())).cancelled())
                .isFalse();
    }

    @Test
    void shouldPrintProgressWhileTrainingAndNoneWhenAskedNot(@TempDir Path dir) {
        List<String> args =
                List.of(
                        "train",
                        "--data",
                        data.toString(),
                        "--patch",
                        "16",
                        "--epochs",
                        "30",
                        "--accelerator",
                        "simulated:20",
                        "--no-web-ui");
        List<String> with = new java.util.ArrayList<>(args);
        with.addAll(
                List.of("--progress-interval", "200", "--run-dir", dir.resolve("a").toString()));
        Run r = run(with.toArray(String[]::new));
        assertThat(r.status).as(r.err).isZero();
        // 5 training cases x 30 epochs in 75 steps of 20 ms: several lines, not a terminal.
        assertThat(r.err.lines().filter(l -> l.startsWith("progress: ")).toList())
                .isNotEmpty()
                .allMatch(
                        l ->
                                l.matches(
                                        "progress: epoch \\d+/30, \\d+/150 samples \\(\\d+ %\\),"
                                                + " [0-9.]+/s, accelerator busy \\d+ %, \\d+ slow,"
                                                + "( \\d+ of \\d+ workers active,)?"
                                                + " ETA (\\d+ s|-)"),
                        "a progress line")
                // While the workers run, the scheduler's count (--workers auto, the default).
                .anyMatch(l -> l.matches(".* \\d+ of \\d+ workers active, ETA .*"));

        List<String> without = new java.util.ArrayList<>(args);
        without.addAll(
                List.of("--progress-interval", "0", "--run-dir", dir.resolve("b").toString()));
        Run quiet = run(without.toArray(String[]::new));
        assertThat(quiet.status).as(quiet.err).isZero();
        assertThat(quiet.err).doesNotContain("progress: ");
    }

    @Test
    void shouldFindTheLostConnectionOfAFailedClientPreferringTheMessageThatNamesTheAddress() {
        var refused = new java.net.ConnectException("Connection refused");
        var annotated =
                new java.net.ConnectException("Connection refused: localhost/127.0.0.1:8081");
        annotated.initCause(refused);
        var retries = new RuntimeException("Number of retries has been exhausted.", annotated);
        assertThat(Failure.of(new RuntimeException("x", retries)).connectionLost())
                .isEqualTo("Connection refused: localhost/127.0.0.1:8081");
        assertThat(Failure.of(new RuntimeException("x", refused)).connectionLost())
                .isEqualTo("Connection refused");
        assertThat(Failure.of(new RuntimeException("x")).connectionLost()).isNull();
    }

    @Test
    void shouldRefuseACountOutOfRangeNamingItsOption() {
        String[][] cases = {
            {"--slow-workers", "0", "--slow-workers must be >= 1, not 0"},
            {"--workers", "-2", "--workers must be >= 1, not -2"},
            {"--workers", "many", "--workers must be auto or a number, not 'many'"},
            {"--queue-depth", "0", "--queue-depth must be >= 1, not 0"},
            {"--checkpoint-interval", "5", "--checkpoint-interval must be >= 10, not 5"},
            {"--restart-attempts", "-1", "--restart-attempts must be >= 0, not -1"},
            {"--progress-interval", "-1", "--progress-interval must be >= 0, not -1"},
            {"--metrics-port", "70000", "--metrics-port must be a port (0-65535), not 70000"},
            {"--devices", "tpu", "--devices 'tpu': unknown device kind; expected cpu, cpu:N"},
            {"--timeout", "soon", "--timeout must be 'auto' or a positive number"},
        };
        for (String[] c : cases) {
            Run run = run("train", "--data", data.toString(), c[0], c[1], "--no-web-ui");
            assertThat(run.status).as(c[0]).isEqualTo(2);
            // Checked at the option, and said once: no "Invalid value for option" before it.
            assertThat(run.err.lines().findFirst().orElse(""))
                    .as(c[0])
                    .startsWith("error: " + c[2]);
        }
    }

    @Test
    void shouldServeTheLoadersMetricsToPrometheusOnLoopbackWhileTraining(@TempDir Path dir)
            throws Exception {
        int port = FlinkSetup.freePort();
        CompletableFuture<Run> training =
                CompletableFuture.supplyAsync(
                        () ->
                                run(
                                        "train",
                                        "--data",
                                        data.toString(),
                                        "--patch",
                                        "16",
                                        "--epochs",
                                        "40",
                                        "--accelerator",
                                        "simulated:30",
                                        "--no-web-ui",
                                        "--progress-interval",
                                        "0",
                                        "--metrics-port",
                                        Integer.toString(port),
                                        "--run-dir",
                                        dir.resolve("run").toString()));
        // The loader's own metrics, as Prometheus names them, once the tasks run.
        List<String> ours =
                List.of(
                        "samplesFast",
                        "samplesSlow",
                        "timeoutMs",
                        "activeWorkers",
                        "queueDepth",
                        "busyMillis",
                        "steps");
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        String scraped = "";
        List<String> listening = List.of();
        while (!training.isDone() && !ours.stream().allMatch(scraped::contains)) {
            try {
                scraped =
                        http.send(
                                        HttpRequest.newBuilder(
                                                        URI.create(
                                                                "http://localhost:"
                                                                        + port
                                                                        + "/metrics"))
                                                .GET()
                                                .build(),
                                        HttpResponse.BodyHandlers.ofString())
                                .body();
                listening = WebUiTest.listeningAddresses();
            } catch (java.io.IOException notYet) {
                // the cluster is still starting
            }
            Thread.sleep(100);
        }
        Run run = training.get();
        assertThat(run.status).as(run.err).isZero();
        assertThat(run.err).contains("metrics on http://localhost:" + port + "/metrics");
        for (String metric : ours) {
            assertThat(scraped).contains("flink_taskmanager_job_task_operator_" + metric + "{");
        }
        // Its socket, like every other of the run, listens on loopback only.
        String hexPort = String.format(java.util.Locale.ROOT, ":%04X", port);
        assertThat(listening).anyMatch(a -> a.endsWith(hexPort));
        assertThat(listening).allMatch(WebUiTest::loopback, "loopback");
    }

    @Test
    void shouldRefuseATakenMetricsPortInOneLine() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            Run run =
                    run(
                            "train",
                            "--data",
                            data.toString(),
                            "--no-web-ui",
                            "--metrics-port",
                            Integer.toString(port));
            assertThat(run.status).isEqualTo(2);
            assertThat(run.err.lines().findFirst().orElse(""))
                    .contains(
                            "port "
                                    + port
                                    + " on localhost is taken: give --metrics-port N for another"
                                    + " port, or 0 for a free one");
        }
    }

    private Path copyWithTruncatedLabel(String name) throws Exception {
        Path dir = Files.createDirectories(data.resolveSibling(data.getFileName() + "-" + name));
        try (var files = Files.list(data)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(
                        f,
                        dir.resolve(f.getFileName()),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
        Path label = dir.resolve("case_00002_y.npy");
        byte[] bytes = Files.readAllBytes(label);
        Files.write(label, java.util.Arrays.copyOf(bytes, bytes.length / 2));
        return dir;
    }

    record Run(int status, String out, String err) {}

    /**
     * A run's options for a test that reads what it writes: nothing but its summary on the console
     * (no web UI, progress or plots), its run folder, report and trace where given.
     */
    static List<String> quietRun(Path runDir, Path report, Path trace) {
        return List.of(
                "--no-web-ui",
                "--progress-interval",
                "0",
                "--no-plots",
                "--run-dir",
                runDir.toString(),
                "--report",
                report.toString(),
                "--trace",
                trace.toString());
    }

    /** Runs the command line with stdout and stderr captured. */
    static synchronized Run run(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int status = Main.run(args);
            return new Run(
                    status,
                    out.toString(StandardCharsets.UTF_8),
                    err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }
}
