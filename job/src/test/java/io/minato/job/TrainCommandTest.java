package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.workload.kits19.KitsLikeGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The train command end to end on its own embedded cluster, as a user runs it. */
class TrainCommandTest {
    @TempDir static Path data;
    @TempDir Path out;

    @BeforeAll
    static void generate() throws Exception {
        KitsLikeGenerator.builder().optCases(6).optScale(0.1).optSeed(2).build().generate(data);
    }

    @Test
    void shouldWriteEveryContractFieldOfTheReportAndTheTrace() throws Exception {
        Path report = out.resolve("report.json");
        Path trace = out.resolve("trace.csv");
        MainTest.Run run =
                run(
                        "train",
                        "--data",
                        data.toString(),
                        "--patch",
                        "8",
                        "--eval-cases",
                        "2",
                        "--epochs",
                        "2",
                        "--devices",
                        "cpu:2",
                        "--batch",
                        "2",
                        "--accelerator",
                        "simulated:2",
                        "--no-web-ui",
                        "--run-dir",
                        out.resolve("run").toString(),
                        "--report",
                        report.toString(),
                        "--trace",
                        trace.toString(),
                        "--cache-dir",
                        out.resolve("cache").toString());
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.out()).contains("minato: ").contains("8 samples").contains("0 dropped");
        assertThat(out.resolve("run").resolve("tmp"))
                .as(
                        "the embedded cluster's temporary files (its 24 MB RPC jar among them) are"
                                + " kept in the run folder, and removed at the run's end")
                .doesNotExist();
        assertThat(out.resolve("run").resolve("usage.png")).isRegularFile();
        assertThat(out.resolve("run").resolve("prep-times.png")).isRegularFile();
        assertThat(run.err()).contains("plots: ");
        // 8 samples are too few for the auto timeout to set a deadline.
        assertThat(run.out()).contains("timeout none: no deadline yet").doesNotContain("Infinity");
        try (var entries = Files.list(out.resolve("cache"))) {
            assertThat(entries.map(f -> f.getFileName().toString()))
                    .as("the start-up check of every case, remembered")
                    .contains("case_00000.check", "case_00001.check", "case_00005.check");
        }
        String json = Files.readString(report);
        // Epoch 0 is 4 samples; a loader running ahead may train some of epoch 1 by its end.
        assertThat(json)
                .containsPattern("\"first_epoch\": \\{\"wall_s\": [0-9.]+, \"samples\": [4-8]\\},");
        for (String field :
                List.of(
                        "\"loader\": \"minato\"",
                        "\"devices\": 2",
                        "\"batch\": 2",
                        "\"patch\": 8",
                        "\"epochs\": 2",
                        "\"seed\": 7",
                        "\"dataset\": {\"cases\": 6, \"train\": 4, \"eval\": 2}",
                        "\"wall_s\": ",
                        "\"steps\": 2",
                        "\"delivered\": 8",
                        "\"fast\": ",
                        "\"slow\": ",
                        "\"dropped\": 0",
                        "\"quarantined\": 0",
                        "\"kind\": \"simulated\"",
                        "\"busy_fraction\": ",
                        "\"gpu\": null",
                        "\"wait_s\": ",
                        "\"p50\": ",
                        "\"p90\": ",
                        "\"p99\": ",
                        "\"max\": ",
                        "\"sum\": ",
                        "\"cores\": ",
                        "\"process_cpu_s\": ",
                        "\"bound_s\": ",
                        "\"timeout_ms\": ",
                        "\"case_cache\": {\"hits\": ",
                        "\"loss\": null",
                        "\"dice\": null")) {
            assertThat(json).contains(field);
        }
        List<String> lines = Files.readAllLines(trace);
        assertThat(lines.get(0)).isEqualTo("epoch,index,case,device,step,path");
        assertThat(lines).hasSize(1 + 8);
        assertThat(lines.subList(1, 9))
                .allMatch(l -> l.matches("[01],[0-3],[0-3],[01],[01],(fast|slow)"));
    }

    @Test
    void shouldRememberNothingWithNoCaseCache() throws Exception {
        Path report = out.resolve("report.json");
        Path cache = out.resolve("cache");
        MainTest.Run run =
                run(
                        "train",
                        "--data",
                        data.toString(),
                        "--patch",
                        "8",
                        "--eval-cases",
                        "2",
                        "--epochs",
                        "1",
                        "--accelerator",
                        "simulated:1",
                        "--no-web-ui",
                        "--run-dir",
                        out.resolve("run").toString(),
                        "--report",
                        report.toString(),
                        "--cache-dir",
                        cache.toString(),
                        "--no-case-cache",
                        "--no-plots");
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(Files.readString(report)).contains("\"case_cache\": null");
        assertThat(cache).doesNotExist();
        assertThat(out.resolve("run").resolve("usage.png")).doesNotExist();
        assertThat(out.resolve("run").resolve("prep-times.png")).doesNotExist();
        assertThat(run.err()).doesNotContain("plots: ");
    }

    @Test
    void shouldReadBothSpellingsOfTheNegatableFlags() {
        TrainCommand plain = new TrainCommand();
        new picocli.CommandLine(plain).parseArgs();
        assertThat(plain.webUi).isTrue();
        assertThat(plain.data.caseCache).isTrue();
        assertThat(plain.plots).isTrue();
        TrainCommand negated = new TrainCommand();
        new picocli.CommandLine(negated).parseArgs("--no-web-ui", "--no-case-cache", "--no-plots");
        assertThat(negated.webUi).isFalse();
        assertThat(negated.data.caseCache).isFalse();
        assertThat(negated.plots).isFalse();
        TrainCommand positive = new TrainCommand();
        new picocli.CommandLine(positive).parseArgs("--web-ui", "--case-cache", "--plots");
        assertThat(positive.webUi).isTrue();
        assertThat(positive.data.caseCache).isTrue();
        assertThat(positive.plots).isTrue();
    }

    /**
     * On the demo set train learns by default (the demo's schedule), whatever else is given; each
     * of its options changes its own value only. Elsewhere train's defaults hold.
     */
    @Test
    void shouldTrainTheDemosScheduleOnTheDemoSetAndLetEachOptionChangeItsOwnValue() {
        RunPlan.Options demo = options();
        assertThat(demo.epochs()).isEqualTo(60);
        var settings = settings(demo);
        assertThat(settings.decaySteps()).containsExactly(800L);
        assertThat(settings.decayFactor()).isEqualTo(0.1f);
        assertThat(settings.learningRates().getNewValue(801))
                .isCloseTo(
                        settings.learningRates().getNewValue(799) / 10,
                        org.assertj.core.data.Offset.offset(1e-6f));
        assertThat(options("--no-web-ui", "--devices", "cpu").epochs()).isEqualTo(60);

        RunPlan.Options shorter = options("--epochs", "5");
        assertThat(shorter.epochs()).isEqualTo(5);
        assertThat(settings(shorter).decaySteps()).containsExactly(800L);
        RunPlan.Options gentler = options("--lr-decay-factor", "0.5");
        assertThat(gentler.epochs()).isEqualTo(60);
        assertThat(settings(gentler).decayFactor()).isEqualTo(0.5f);

        RunPlan.Options mine = options("--data", "/some/where");
        assertThat(mine.epochs()).isEqualTo(2);
        assertThat(settings(mine).decaySteps()).isEmpty();
        assertThat(options("--workload", "images").epochs()).isEqualTo(2);

        assertThat(DemoSchedule.notice(60, settings))
                .startsWith(
                        "the demo: 60 epochs on the demo set, learning rate x 0.1 after step 800");
    }

    private static RunPlan.Options options(String... args) {
        TrainCommand train = new TrainCommand();
        new picocli.CommandLine(train).parseArgs(args);
        return train.options();
    }

    private static io.minato.trainer.TrainingSettings settings(RunPlan.Options o) {
        return o.optimizer().settings(o.data().workload().defaultLearningRate(), o.data().seed());
    }

    @Test
    void shouldTakeTheTailKnobAsAFractionAndAFactorAndSayWhatIsWrongOtherwise() {
        TrainCommand c = new TrainCommand();
        new picocli.CommandLine(c).parseArgs("--tail", "0.05,50");
        assertThat(c.data.tail).isEqualTo(new io.minato.job.report.RunReport.Tail(0.05, 50));
        assertThat(c.data.spec().transformConfig().tailFactor()).isEqualTo(50);
        assertThat(new TrainCommand().data.spec().transformConfig().hasTail()).isFalse();
        for (String bad : List.of("0.05", "1.5,50", "0.05,0", "x,2", "0.1,2,3")) {
            MainTest.Run run = run("train", "--tail", bad);
            assertThat(run.status()).as(bad).isEqualTo(2);
            assertThat(run.err()).contains("'" + bad + "' is not P,K with P a fraction in [0, 1]");
        }
    }

    @Test
    void shouldTrainTheRealUnetOnOneDeviceAndReportItsLoss() throws Exception {
        Path cases = out.resolve("cases");
        KitsLikeGenerator.builder().optCases(5).optScale(0.25).optSeed(4).build().generate(cases);
        Path report = out.resolve("real.json");
        MainTest.Run run =
                run(
                        "train",
                        "--data",
                        cases.toString(),
                        "--patch",
                        "32",
                        "--eval-cases",
                        "1",
                        "--epochs",
                        "1",
                        "--devices",
                        "cpu",
                        "--no-web-ui",
                        "--run-dir",
                        out.resolve("run").toString(),
                        "--report",
                        report.toString());
        assertThat(run.status()).as(run.err()).isZero();
        String json = Files.readString(report);
        assertThat(json)
                .contains(
                        "\"kind\": \"cpu\"",
                        "\"steps\": 2",
                        "\"delivered\": 4",
                        "\"loss\": {\"first\": ",
                        "\"dice\": {\"mean\": ");

        // The saved model evaluates on its own, too.
        MainTest.Run eval = evaluate(cases, out.resolve("run").resolve("model-device-0"));
        assertThat(eval.status()).as(eval.err()).isZero();
        assertThat(eval.out()).startsWith("Dice ").contains("on 1 held-out case(s)");
        // One line a case as it is evaluated, beside the result (train prints them too).
        assertThat(eval.err())
                .containsPattern(
                        "evaluated case_\\d{5}: kidney \\d\\.\\d{3}, tumour \\d\\.\\d{3} \\(\\d+\\.\\d s\\)");
        assertThat(run.err()).containsPattern("evaluated case_\\d{5}: kidney ");
        // On the device asked; a GPU this machine lacks falls back in one line, a bad name fails.
        MainTest.Run onCpu =
                evaluate(cases, out.resolve("run").resolve("model-device-0"), "--devices", "cpu");
        assertThat(onCpu.status()).as(onCpu.err()).isZero();
        assertThat(onCpu.out()).isEqualTo(eval.out().replace(", on gpu0", ", on cpu"));
        assertThat(onCpu.out().strip()).endsWith(", on cpu");
        if (Files.notExists(Path.of("/dev/nvidiactl"))) {
            MainTest.Run noGpu =
                    evaluate(
                            cases,
                            out.resolve("run").resolve("model-device-0"),
                            "--devices",
                            "gpu0");
            assertThat(noGpu.status()).as(noGpu.err()).isZero();
            assertThat(noGpu.out()).isEqualTo(onCpu.out());
            assertThat(noGpu.err()).contains("no GPU");
        }
        MainTest.Run badDevice =
                evaluate(cases, out.resolve("run").resolve("model-device-0"), "--devices", "tpu");
        assertThat(badDevice.status()).isEqualTo(2);
        assertThat(badDevice.err()).contains("tpu");
        MainTest.Run missing = evaluate(cases, out.resolve("nothing-here"));
        assertThat(missing.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(missing.err().strip()).doesNotContain("\n");
        assertThat(missing.err()).contains("nothing-here: no saved model unet3d-0000.params");
        MainTest.Run otherWidth =
                evaluate(cases, out.resolve("run").resolve("model-device-0"), "--width", "0.125");
        assertThat(otherWidth.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(otherWidth.err().strip())
                .doesNotContain("\n")
                .contains("is --width the one it was trained with?");
    }

    @Test
    void shouldTrainTwoCpuReplicasInLockstepAndKeepOneModel() throws Exception {
        Path cases = out.resolve("cases");
        KitsLikeGenerator.builder().optCases(8).optScale(0.25).optSeed(4).build().generate(cases);
        Path report = out.resolve("dp.json");
        MainTest.Run run =
                run(
                        "train",
                        "--data",
                        cases.toString(),
                        "--patch",
                        "32",
                        "--eval-cases",
                        "1",
                        "--epochs",
                        "1",
                        "--devices",
                        "cpu:2",
                        "--weight-decay",
                        "0.001",
                        "--nesterov",
                        "--warmup-steps",
                        "1",
                        "--lr-decay-steps",
                        "2",
                        "--lr-decay-factor",
                        "0.5",
                        "--no-web-ui",
                        "--run-dir",
                        out.resolve("run").toString(),
                        "--report",
                        report.toString());
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(report)
                .content()
                .contains(
                        "\"devices\": 2",
                        // 7 training cases, 1 epoch, batches of 2: the workers deal them 4
                        // and 3 (or 5 and 2) to the devices, which end with a partial batch;
                        // a device out of batches joins the others' steps with no samples.
                        "\"delivered\": 7",
                        "\"dropped\": 0",
                        "\"optimizer\": {\"name\": \"sgd\", \"learning_rate\": 0.1,"
                                + " \"momentum\": 0.9, \"weight_decay\": 0.001, \"nesterov\":"
                                + " true, \"warmup_steps\": 1, \"warmup_start_lr\": 0.0,"
                                + " \"decay_steps\": [2], \"decay_factor\": 0.5, \"schedule\":"
                                + " \"linear warm-up from 0.0 to 0.1 over 1 steps, then 0.1 times"
                                + " 0.5 after each of steps [2]\"",
                        "\"precision\": \"fp32\"}",
                        "\"dice\": {\"mean\": ");
        // The replicas are identical: the first device keeps the model, for evaluation.
        assertThat(out.resolve("run/model-device-0/unet3d-0000.params")).isRegularFile();
        assertThat(out.resolve("run/model-device-1")).doesNotExist();
    }

    @Test
    void shouldStopBeforeTrainingOnBadInputNamingTheFile() throws Exception {
        Path bad = out.resolve("bad");
        Files.createDirectories(bad);
        try (var files = Files.list(data)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, bad.resolve(f.getFileName()));
            }
        }
        Files.delete(bad.resolve("case_00001_y.npy"));
        MainTest.Run run =
                run(
                        "train",
                        "--data",
                        bad.toString(),
                        "--patch",
                        "8",
                        "--accelerator",
                        "simulated:1",
                        "--no-web-ui",
                        "--run-dir",
                        out.resolve("run").toString());
        assertThat(run.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err().strip())
                .contains("case_00001_x.npy: image has no label case_00001_y.npy");
        assertThat(out.resolve("run")).doesNotExist();
    }

    /**
     * A port another run's web UI holds: with the web UI, one line naming the options, before
     * anything is written; without it, the embedded cluster's REST endpoint takes a free port.
     */
    @Test
    void shouldSayInOneLineThatTheWebUiPortIsTakenAndRunBesideItWithoutTheWebUi() throws Exception {
        try (java.net.ServerSocket taken =
                new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            String port = Integer.toString(taken.getLocalPort());
            MainTest.Run refused =
                    run(
                            "train",
                            "--data",
                            data.toString(),
                            "--patch",
                            "8",
                            "--accelerator",
                            "simulated:1",
                            "--rest-port",
                            port,
                            "--run-dir",
                            out.resolve("refused").toString());
            assertThat(refused.status()).isEqualTo(2);
            assertThat(refused.err())
                    .contains("port " + port + " on localhost is taken")
                    .contains("--rest-port N")
                    .contains("0 picks a free one")
                    .contains("--no-web-ui")
                    .doesNotContain("Exception");
            assertThat(out.resolve("refused")).doesNotExist();

            MainTest.Run beside =
                    run(
                            "train",
                            "--data",
                            data.toString(),
                            "--patch",
                            "8",
                            "--epochs",
                            "1",
                            "--accelerator",
                            "simulated:1",
                            "--rest-port",
                            port,
                            "--no-web-ui",
                            "--run-dir",
                            out.resolve("beside").toString());
            assertThat(beside.status()).as(beside.err()).isZero();
        }
        // --rest-port 0: a free port, named on the start line.
        MainTest.Run anyPort =
                run(
                        "train",
                        "--data",
                        data.toString(),
                        "--patch",
                        "8",
                        "--epochs",
                        "1",
                        "--accelerator",
                        "simulated:1",
                        "--rest-port",
                        "0",
                        "--run-dir",
                        out.resolve("any-port").toString());
        assertThat(anyPort.status()).as(anyPort.err()).isZero();
        assertThat(anyPort.err())
                .containsPattern("web UI on http://localhost:[1-9][0-9]*")
                .doesNotContain("localhost:0");
    }

    /** Outputs that cannot be written stop the run in one line before the first sample. */
    @Test
    void shouldRefuseOutputsItCannotWriteBeforeTraining() throws Exception {
        Path file = Files.writeString(out.resolve("a-file"), "x");
        Path folder = Files.createDirectories(out.resolve("a-folder"));
        String[][] cases = {
            {"--report", folder.toString(), "--report " + folder + ": is a folder"},
            {
                "--trace",
                file.resolve("trace.csv").toString(),
                "--trace "
                        + file.resolve("trace.csv")
                        + ": cannot write there (a file is in the way"
            },
            {
                "--run-dir",
                file.toString(),
                "--run-dir " + file + ": cannot create it (a file is in the way: " + file + ")"
            },
            // A folder that exists but takes no files, even for root.
            {
                "--run-dir",
                "/proc",
                "--run-dir /proc: cannot write there; the folder takes no new files"
            },
        };
        for (String[] c : cases) {
            List<String> args =
                    new java.util.ArrayList<>(
                            List.of(
                                    "train",
                                    "--data",
                                    data.toString(),
                                    "--patch",
                                    "8",
                                    "--accelerator",
                                    "simulated:1",
                                    "--no-web-ui",
                                    c[0],
                                    c[1]));
            if (!c[0].equals("--run-dir")) {
                args.addAll(List.of("--run-dir", out.resolve("never").toString()));
            }
            MainTest.Run refused = run(args.toArray(String[]::new));
            assertThat(refused.status()).as(c[0]).isEqualTo(2);
            assertThat(refused.err()).contains(c[2]).doesNotContain("Exception");
            assertThat(refused.out()).doesNotContain("minato: ");
        }
        assertThat(out.resolve("never")).doesNotExist();
        assertThat(file).hasContent("x");
    }

    /** Evaluates a model folder on the first held-out case of {@code cases}. */
    private static MainTest.Run evaluate(Path cases, Path model, String... more) {
        List<String> args =
                new java.util.ArrayList<>(
                        List.of(
                                "evaluate",
                                "--data",
                                cases.toString(),
                                "--patch",
                                "32",
                                "--eval-cases",
                                "1",
                                "--model",
                                model.toString()));
        args.addAll(List.of(more));
        return run(args.toArray(String[]::new));
    }

    private static MainTest.Run run(String... args) {
        return MainTest.run(args);
    }
}
