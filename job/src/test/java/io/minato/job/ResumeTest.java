package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.trainer.DeviceSummary;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The failure a training user meets most: the whole process dies. A real training JVM, started as
 * its own process, is killed with SIGKILL mid-run; {@code train --resume RUN_DIR} continues it from
 * its latest complete checkpoint, and over both processes every (epoch, index) is trained exactly
 * once.
 */
class ResumeTest {
    private static final int TRAIN_CASES = 5; // 6 generated, case_00002 held out
    private static final int EPOCHS = 240;

    @TempDir static Path data;

    @BeforeAll
    static void generate() throws Exception {
        KitsLikeGenerator.builder().optCases(6).optScale(0.1).optSeed(3).build().generate(data);
    }

    @Test
    void shouldResumeARunKilledWithSigkillTrainingEverySampleExactlyOnce(@TempDir Path dir)
            throws Exception {
        Path run = dir.resolve("run");
        Path report = dir.resolve("report.json");
        Path trace = dir.resolve("trace.csv");
        List<String> args = trainArgs(run, report, trace, "--no-web-ui");
        Process killed = startMain(List.of(), args, dir.resolve("killed.log"));
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        // A few checkpoints in, well before the end (300 steps of 30 ms per device).
        while (checkpointsDone(run) < 3 && killed.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        String log = Files.readString(dir.resolve("killed.log"));
        assertThat(killed.isAlive()).as("still training when killed: %s", log).isTrue();
        killed.destroyForcibly(); // SIGKILL: no shutdown hook, no cleanup
        assertThat(killed.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(report).as("the killed run wrote no report").doesNotExist();
        long tracedBeforeKill = traceLines(run);
        assertThat(tracedBeforeKill).as("steps trained before the kill").isPositive();
        Files.delete(dir.resolve("train-cases.txt")); // the run keeps its own copy

        resumeAndCheckEverySampleTrainedOnce(run, report, trace);
    }

    /**
     * {@code flink stop} (stop with a savepoint, no drain) against a running embedded run, through
     * the REST call the CLI makes, with the savepoint outside the run directory: the job ends as
     * finished with samples left, the run says so in one line and is not marked finished, and
     * {@code --resume} continues it from that savepoint.
     */
    @Test
    void shouldResumeARunStoppedWithASavepointElsewhereTrainingEverySampleExactlyOnce(
            @TempDir Path dir) throws Exception {
        Path run = dir.resolve("run");
        Path report = dir.resolve("report.json");
        Path trace = dir.resolve("trace.csv");
        Path savepoints = dir.resolve("elsewhere");
        Path log = dir.resolve("stopped.log");
        Process stopped =
                startMain(List.of(), trainArgs(run, report, trace, "--rest-port", "0"), log);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (checkpointsDone(run) < 3 && stopped.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        Matcher port =
                Pattern.compile("web UI on http://localhost:(\\d+)").matcher(Files.readString(log));
        assertThat(port.find()).as(Files.readString(log)).isTrue();
        String rest = "http://localhost:" + port.group(1);
        HttpClient http = HttpClient.newHttpClient();
        String jobs =
                http.send(
                                HttpRequest.newBuilder(URI.create(rest + "/jobs")).build(),
                                HttpResponse.BodyHandlers.ofString())
                        .body();
        Matcher job = Pattern.compile("\"id\":\"([0-9a-f]{32})\"").matcher(jobs);
        assertThat(job.find()).as(jobs).isTrue();
        HttpResponse<String> stop =
                http.send(
                        HttpRequest.newBuilder(URI.create(rest + "/jobs/" + job.group(1) + "/stop"))
                                .header("Content-Type", "application/json")
                                .POST(
                                        HttpRequest.BodyPublishers.ofString(
                                                "{\"targetDirectory\": \""
                                                        + savepoints
                                                        + "\", \"drain\": false}"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(stop.statusCode()).as(stop.body()).isEqualTo(202);
        // The flink CLI asks for the savepoint's result at growing intervals, up to 2 s apart:
        // once the run said it stopped, it waits for that question (its REST endpoint stays
        // until the result was fetched), and ends after it.
        Matcher trigger = Pattern.compile("\"request-id\":\"([0-9a-f]+)\"").matcher(stop.body());
        assertThat(trigger.find()).as(stop.body()).isTrue();
        while (!Files.readString(log).contains("stopped with a savepoint")
                && stopped.isAlive()
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        Thread.sleep(1500);
        // The run waits for that question: its end here (a failed stop, say) would otherwise
        // show only as the question's ConnectException.
        assertThat(stopped.isAlive())
                .as(
                        () ->
                                "the run waits for its savepoint's result to be fetched; it said:\n"
                                        + said(log))
                .isTrue();
        URI status = URI.create(rest + "/jobs/" + job.group(1) + "/savepoints/" + trigger.group(1));
        String answer =
                http.send(
                                HttpRequest.newBuilder(status).build(),
                                HttpResponse.BodyHandlers.ofString())
                        .body();
        assertThat(answer).contains("COMPLETED");
        Matcher location = Pattern.compile("\"location\":\"([^\"]+)\"").matcher(answer);
        assertThat(location.find()).as(answer).isTrue();
        assertThat(stopped.waitFor(60, TimeUnit.SECONDS)).as(Files.readString(log)).isTrue();
        String said = Files.readString(log);
        assertThat(stopped.exitValue()).as(said).isZero();
        assertThat(said)
                .contains("stopped with a savepoint in " + location.group(1) + ";")
                .contains("stopped with a savepoint in file:" + savepoints + "/savepoint-")
                .contains("; continue the run with --resume " + run.toAbsolutePath());
        assertThat(report).as("the stopped run wrote no report").doesNotExist();
        assertThat(run.resolve(RunArgs.FINISHED)).doesNotExist();
        assertThat(RunArgs.latestCheckpoint(run).getParent()).isEqualTo(savepoints);

        resumeAndCheckEverySampleTrainedOnce(run, report, trace);
    }

    /**
     * The disk of the run directory fills up mid-run (a small tmpfs, filled by another writer once
     * the run has checkpointed): the run ends in one line saying how to go on, and once the filler
     * is deleted, {@code --resume} trains the rest, every (epoch, index) once. Mounting needs root
     * (as this machine and CI have); elsewhere the test is skipped, saying why.
     */
    @Test
    void shouldResumeARunWhoseDiskFilledUpOnceSpaceIsFreed(@TempDir Path dir) throws Exception {
        Path small = Files.createDirectories(dir.resolve("small"));
        Process mount =
                new ProcessBuilder(
                                "mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", small.toString())
                        .redirectErrorStream(true)
                        .start();
        String mountSaid =
                new String(mount.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assumptions.assumeTrue(
                mount.waitFor() == 0, "cannot mount a small tmpfs here: " + mountSaid.strip());
        try {
            Path run = small.resolve("run");
            Path report = dir.resolve("report.json");
            Path trace = dir.resolve("trace.csv");
            Path log = dir.resolve("full.log");
            // Once the disk is full every attempt fails alike: two restarts, not the default's ten.
            Process full =
                    startMain(
                            List.of(),
                            trainArgs(run, report, trace, "--no-web-ui", "--restart-attempts", "2"),
                            log);
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
            while (checkpointsDone(run) < 3 && full.isAlive() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(full.isAlive()).as(Files.readString(log)).isTrue();
            Path filler = small.resolve("filler");
            try (var out = Files.newOutputStream(filler)) {
                byte[] mib = new byte[1 << 20];
                while (true) {
                    out.write(mib);
                }
            } catch (java.io.IOException noSpace) {
                assertThat(noSpace).hasMessageContaining("No space left on device");
            }
            assertThat(full.waitFor(2, TimeUnit.MINUTES)).as(Files.readString(log)).isTrue();
            String said = Files.readString(log).strip();
            assertThat(full.exitValue()).as(said).isEqualTo(1);
            assertThat(said.lines().reduce((a, b) -> b).orElse(""))
                    .startsWith("error: ")
                    .contains("o space left on")
                    .endsWith(
                            "what the run wrote stays in "
                                    + run
                                    + ": free space, then continue it with --resume "
                                    + run);
            Files.delete(filler);

            resumeAndCheckEverySampleTrainedOnce(run, report, trace);
        } finally {
            new ProcessBuilder("umount", "-l", small.toString()).start().waitFor();
        }
    }

    /**
     * The run's options: it trains the cases of a list (all but case_00002), which the folder
     * beside {@code run} holds until the run was started, so that a resume takes the run's own
     * copy.
     */
    private static List<String> trainArgs(Path run, Path report, Path trace, String... more)
            throws IOException {
        Path list = run.resolveSibling("train-cases.txt");
        Files.write(
                list,
                List.of("case_00000", "case_00001", "case_00003", "case_00004", "case_00005"));
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "train",
                                "--data",
                                data.toString(),
                                "--patch",
                                "16",
                                "--epochs",
                                Integer.toString(EPOCHS),
                                "--devices",
                                "cpu:2",
                                "--accelerator",
                                "simulated:30",
                                "--cases",
                                list.toString(),
                                "--workers",
                                "1",
                                "--checkpoint-interval",
                                "200",
                                "--run-dir",
                                run.toString(),
                                "--report",
                                report.toString(),
                                "--trace",
                                trace.toString()));
        args.addAll(List.of(more));
        return args;
    }

    /**
     * {@code train --resume RUN}: the run goes on from its latest checkpoint or savepoint to the
     * end; over both processes every (epoch, index) is trained exactly once.
     */
    private static void resumeAndCheckEverySampleTrainedOnce(Path run, Path report, Path trace)
            throws Exception {
        long resumedAt = System.currentTimeMillis();
        MainTest.Run resumed = MainTest.run("train", "--resume", run.toString());

        assertThat(resumed.status()).as(resumed.err()).isZero();
        assertThat(resumed.err()).contains("resuming " + run + " from ");
        assertThat(resumed.out()).contains((TRAIN_CASES * EPOCHS) + " samples", "0 dropped");
        // The stored --report and --trace: the resumed run writes them for the whole run.
        assertThat(report).content().contains("\"delivered\": " + TRAIN_CASES * EPOCHS);
        assertThat(MiniClusterJobs.trainedOnce(trace)).hasSize(TRAIN_CASES * EPOCHS);
        Set<String> cases = new TreeSet<>();
        for (String line : Files.readAllLines(trace).subList(1, TRAIN_CASES * EPOCHS + 1)) {
            cases.add(line.split(",")[2]);
        }
        assertThat(cases)
                .as("the listed cases, by their numbers")
                .containsExactly("0", "1", "3", "4", "5");
        MainTest.Run again = MainTest.run("train", "--resume", run.toString());
        assertThat(again.status()).isEqualTo(2);
        assertThat(again.err()).contains("that run finished; there is nothing left to train");
        // It went on from a checkpoint rather than from the start: the devices' counters came
        // back with it, their first step before the resume began.
        for (int d = 0; d < 2; d++) {
            assertThat(DeviceSummary.read(DeviceSummary.file(run, d)).firstStepStartMillis())
                    .isPositive()
                    .isLessThan(resumedAt);
        }
    }

    @Test
    void shouldRefuseAResumeThatWouldChangeTheRunOrHasNothingToResumeFrom(@TempDir Path dir)
            throws Exception {
        Path run = Files.createDirectories(dir.resolve("run"));
        RunArgs.write(
                run,
                List.of("--data", data.toString(), "--seed", "3", "--epochs", "2", "--no-web-ui"));

        MainTest.Run noCheckpoint = MainTest.run("train", "--resume", run.toString());
        assertThat(noCheckpoint.status()).isEqualTo(2);
        assertThat(noCheckpoint.err().strip())
                .doesNotContain("\n")
                .contains("--resume " + run + ": no complete checkpoint to resume from");

        Path chk = Files.createDirectories(run.resolve("checkpoints/0123/chk-4"));
        Files.writeString(chk.resolve("_metadata"), "");
        String[][] refused = {
            {
                "--seed",
                "4",
                "--seed 4 would change what the run trains (it was started with --seed 3)"
            },
            {
                "--batch",
                "4",
                "--batch 4 would change what the run trains (it was started without --batch)"
            },
            {
                "--nesterov",
                null,
                "--nesterov would change what the run trains (it was started without"
            },
            {"--run-dir", dir.resolve("other").toString(), "leave out --run-dir"},
        };
        for (String[] r : refused) {
            List<String> a = new ArrayList<>(List.of("train", "--resume", run.toString(), r[0]));
            if (r[1] != null) {
                a.add(r[1]);
            }
            MainTest.Run refusal = MainTest.run(a.toArray(String[]::new));
            assertThat(refusal.status()).as(r[0]).isEqualTo(2);
            assertThat(refusal.err().strip()).as(r[0]).doesNotContain("\n").contains(r[2]);
        }

        Path notARun = Files.createDirectories(dir.resolve("not-a-run"));
        MainTest.Run none = MainTest.run("train", "--resume", notARun.toString());
        assertThat(none.status()).isEqualTo(2);
        assertThat(none.err()).contains("not the run directory of a train run (no run-args");
    }

    @Test
    void shouldKeepTheRunsIdentityAcrossResumesAndGiveARunStartedAfreshANewOne(@TempDir Path dir)
            throws Exception {
        String first = RunArgs.identify(dir, true);
        assertThat(RunArgs.identify(dir, false)).isEqualTo(first);
        assertThat(dir.resolve(RunArgs.ID)).content().isEqualTo(first + "\n");
        String again = RunArgs.identify(dir, true);
        assertThat(again).isNotEqualTo(first);
        assertThat(RunArgs.identify(dir, false)).isEqualTo(again);
    }

    @Test
    void shouldStoreTheRunsOptionsWithAbsolutePathsAndWithoutItsFolder(@TempDir Path dir)
            throws Exception {
        RunArgs.write(
                dir,
                List.of("--data=rel/data", "--run-dir", "x", "--seed", "5", "--trace", "t.csv"));
        List<String> stored = RunArgs.read(dir);
        assertThat(stored)
                .containsExactly(
                        "--data",
                        Path.of("rel/data").toAbsolutePath().toString(),
                        "--seed",
                        "5",
                        "--trace",
                        Path.of("t.csv").toAbsolutePath().toString());
        assertThat(RunArgs.valueOf(stored, Set.of("--seed"))).contains("5");
        assertThat(RunArgs.valueOf(stored, Set.of("--batch"))).isEmpty();
    }

    /** Main in a JVM of its own, with this one's classpath and module openings, and {@code jvm}. */
    static Process startMain(List<String> jvm, List<String> args, Path log) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--add-") || a.startsWith("-Dai.djl")) {
                command.add(a);
            }
        }
        command.add("-Xmx1g");
        command.addAll(jvm);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Main.class.getName());
        command.addAll(args);
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    private static long checkpointsDone(Path run) throws Exception {
        try {
            return Long.parseLong(
                    RunArgs.latestCheckpoint(run).getFileName().toString().substring(4));
        } catch (IllegalArgumentException e) {
            return 0;
        }
    }

    private static long traceLines(Path run) throws Exception {
        long n = 0;
        try (Stream<Path> files = Files.list(run)) {
            for (Path f : files.toList()) {
                if (f.getFileName().toString().startsWith("trace-device-")) {
                    n += Files.readAllLines(f, StandardCharsets.UTF_8).size();
                }
            }
        }
        return n;
    }

    /** What a run's process wrote, for a failure's description. */
    private static String said(Path log) {
        try {
            return Files.readString(log);
        } catch (java.io.IOException e) {
            return "(its log " + log + " cannot be read: " + e.getMessage() + ")";
        }
    }
}
