package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.dataflow.LoaderJob;
import io.minato.json.Json;
import io.minato.loader.SampleRecipe;
import io.minato.spi.FileMemo;
import io.minato.spi.Workload;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.TrainerSink;
import io.minato.trainer.TrainingSettings;
import io.minato.trainer.images.ImageClassifier;
import io.minato.workload.images.EncodedImage;
import io.minato.workload.images.ImageConfig;
import io.minato.workload.images.ImageFolder;
import io.minato.workload.images.ImageSetGenerator;
import io.minato.workload.images.ImageTransforms;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code train --workload images} end to end, as a user runs it: a generated folder with one broken
 * image, real DJL training of the classifier under each of the three loaders, the report's accuracy
 * and quarantine, and the trace naming images by their paths.
 */
class ImagesWorkloadTest {
    @TempDir static Path data;
    @TempDir Path out;

    private static final int IMAGES = 18;

    @BeforeAll
    static void generate() throws Exception {
        ImageSetGenerator.builder()
                .optImages(IMAGES)
                .optClasses(3)
                .optSeed(3)
                .optEdges(16, 64)
                .build()
                .generate(data);
        Files.writeString(data.resolve("class_00/broken.jpg"), "not a JPEG");
    }

    private MainTest.Run train(String loader, String onBad, String... more) {
        List<String> args =
                trainOnImages(
                        "--loader",
                        loader,
                        "--patch",
                        "16",
                        "--epochs",
                        "2",
                        "--eval-cases",
                        "3",
                        "--workers",
                        "2",
                        "--on-bad-sample",
                        onBad);
        args.addAll(
                MainTest.quietRun(
                        out.resolve("run-" + loader),
                        out.resolve(loader + ".json"),
                        out.resolve(loader + ".csv")));
        args.addAll(List.of(more));
        return MainTest.run(args.toArray(String[]::new));
    }

    @Test
    void shouldTrainTheClassifierUnderEveryLoaderAndReportAccuracyAndTheBrokenImage()
            throws Exception {
        for (String loader : List.of("minato", "inorder", "djl")) {
            // DJL's loader runs without the memo of decoded images: the report says so.
            boolean remembers = !loader.equals("djl");
            MainTest.Run run =
                    remembers ? train(loader, "skip") : train(loader, "skip", "--no-case-cache");
            assertThat(run.status()).as("%s: %s", loader, run.err()).isZero();
            assertThat(run.err()).contains("skipped: " + data.resolve("class_00/broken.jpg"));

            @SuppressWarnings("unchecked")
            Map<String, Object> r =
                    (Map<String, Object>)
                            Json.parse(Files.readString(out.resolve(loader + ".json")));
            assertThat(r).containsEntry("workload", "images").containsEntry("loader", loader);
            assertThat(r.get("optimizer"))
                    .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                    .containsEntry("network", "cnn2d");
            assertThat(r.get("dice")).isNull();
            assertThat(r.get("accuracy"))
                    .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                    .containsEntry("images", 3.0)
                    .containsKey("top1");
            assertThat(r.get("quarantine"))
                    .isEqualTo(
                            List.of(
                                    Map.of(
                                            "file",
                                            "class_00/broken.jpg",
                                            "reason",
                                            "not an image ImageIO can read")));
            int train = IMAGES - 3;
            assertThat(r.get("dataset"))
                    .isEqualTo(Map.of("cases", IMAGES + 1.0, "train", (double) train, "eval", 3.0));
            assertThat(r.get("samples"))
                    .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                    .containsEntry("quarantined", 1.0)
                    .containsEntry("delivered", 2.0 * train);
            if (remembers) {
                // Every sample looks its image up, and later ones find it decoded (not all: with
                // soft
                // epoch boundaries two samples of one image may be prepared at once).
                @SuppressWarnings("unchecked")
                Map<String, Object> cache = (Map<String, Object>) r.get("case_cache");
                double hits = (Double) cache.get("hits");
                double misses = (Double) cache.get("misses");
                assertThat(hits + misses).as(loader).isGreaterThanOrEqualTo(2.0 * train);
                assertThat(hits).as(loader).isPositive();
                assertThat((Double) cache.get("bytes")).as(loader).isPositive();
            } else {
                assertThat(r).containsEntry("case_cache", null);
            }

            List<String> lines =
                    Files.readAllLines(out.resolve(loader + ".csv"), StandardCharsets.UTF_8);
            assertThat(lines.get(0)).isEqualTo("epoch,index,case,device,step,path");
            assertThat(lines).hasSize(1 + 2 * train);
            Set<String> pairs = new HashSet<>();
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.split(",");
                assertThat(pairs.add(f[0] + "," + f[1])).as(line).isTrue();
                assertThat(f[2]).matches("class_0[0-2]/img_\\d{5}\\.(png|jpg)");
                assertThat(data.resolve(f[2])).isRegularFile();
            }
        }
    }

    /**
     * ResNet-18, asked for by name: it trains, the report names it, and {@code evaluate} scores the
     * saved model as the run did, knowing the network from the folder.
     */
    @Test
    void shouldTrainTheResNetWhenAskedForAndEvaluateItAgain() throws Exception {
        MainTest.Run run = train("minato", "skip", "--network", "resnet18");
        assertThat(run.status()).as(run.err()).isZero();
        @SuppressWarnings("unchecked")
        Map<String, Object> r =
                (Map<String, Object>) Json.parse(Files.readString(out.resolve("minato.json")));
        assertThat(r.get("optimizer"))
                .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                .containsEntry("network", "resnet18");
        @SuppressWarnings("unchecked")
        Map<String, Object> accuracy = (Map<String, Object>) r.get("accuracy");
        assertThat(accuracy).containsEntry("images", 3.0).containsKey("top1");

        Path model = out.resolve("run-minato").resolve("model-device-0");
        MainTest.Run broken = evaluate(model, "--eval-cases", "3");
        assertThat(broken.status()).isEqualTo(3);
        assertThat(broken.err().strip())
                .isEqualTo(
                        "error: "
                                + data.resolve("class_00/broken.jpg")
                                + ": not an image ImageIO can read");
        MainTest.Run again = evaluate(model, "--eval-cases", "3", "--on-bad-sample", "skip");
        assertThat(again.status()).as(again.err()).isZero();
        assertThat(again.out().strip())
                .isEqualTo(
                        String.format(
                                java.util.Locale.ROOT,
                                "top-1 accuracy %.3f (resnet18) on 3 held-out image(s) of %s, on"
                                        + " cpu",
                                (Double) accuracy.get("top1"),
                                data));

        MainTest.Run none = evaluate(model, "--eval-cases", "0", "--on-bad-sample", "skip");
        assertThat(none.status()).isEqualTo(2);
        assertThat(none.err()).contains("no held-out images: give --eval-cases N (N >= 1)");
        MainTest.Run empty = evaluate(out, "--eval-cases", "3", "--on-bad-sample", "skip");
        assertThat(empty.status()).isNotZero();
        assertThat(empty.err().strip().lines())
                .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                .contains(
                        out
                                + ": no saved image classifier in this folder"
                                + " (cnn2d-0000.params or resnet18-0000.params)");
    }

    /** {@code evaluate --workload images} of the model in {@code model} on the generated images. */
    private static MainTest.Run evaluate(Path model, String... more) {
        List<String> args =
                new java.util.ArrayList<>(
                        List.of(
                                "evaluate",
                                "--workload",
                                "images",
                                "--data",
                                data.toString(),
                                "--patch",
                                "16",
                                "--devices",
                                "cpu",
                                "--model",
                                model.toString()));
        args.addAll(List.of(more));
        return MainTest.run(args.toArray(String[]::new));
    }

    @Test
    void shouldStopBeforeTrainingOnABrokenImageNamingIt() {
        MainTest.Run run = train("minato", "fail");
        assertThat(run.status()).isNotZero();
        assertThat(run.err())
                .contains(data.resolve("class_00/broken.jpg") + ": not an image ImageIO can read");
        assertThat(out.resolve("minato.json")).doesNotExist();
    }

    @Test
    void shouldProfileTheImagesPerTransformAndSeeTheDecodedOnesRemembered() {
        FileMemo.clear(ImageTransforms.DECODED); // this JVM's other runs decoded them too
        MainTest.Run run =
                MainTest.run(
                        "profile",
                        "--workload",
                        "images",
                        "--data",
                        data.toString(),
                        "--patch",
                        "16",
                        "--eval-cases",
                        "3",
                        "--epochs",
                        "2",
                        "--on-bad-sample",
                        "skip");
        assertThat(run.status()).as(run.err()).isZero();
        int train = IMAGES - 3;
        assertThat(run.out())
                .contains(
                        train
                                + " training images (3 classes) (3 held out, 1 quarantined), crop 16^2")
                .containsPattern("prepare, CPU\\s+" + 2 * train + " ")
                .containsPattern("decode \\(CPU\\)\\s+" + 2 * train + " ")
                .contains("RandomResizedCrop", "RandomHorizontalFlip", "ColorJitter", "Normalize")
                .containsPattern("prepare, epochs 2\\+ \\(CPU\\)\\s+" + train + " ")
                // Each image decoded once, in the first epoch; the second finds its pixels.
                .contains(
                        "remembered per sample's files: "
                                + train
                                + " found, "
                                + train
                                + " computed")
                .containsPattern("slowest sample class_\\d+/");
        assertThat(run.err()).contains("broken.jpg");
    }

    @Test
    void shouldStopTheProfileOnABrokenImageNamingIt() {
        MainTest.Run run =
                MainTest.run(
                        "profile",
                        "--workload",
                        "images",
                        "--data",
                        data.toString(),
                        "--patch",
                        "16");
        assertThat(run.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err().strip()).doesNotContain("\n").contains("broken.jpg");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void shouldRefuseWhatTheImagesWorkloadDoesNotHaveInOneLine() {
        assertThat(refusedTraining("--tail", "0.05,50"))
                .contains("--tail is the kits19 bench knob");
        assertThat(refusedTraining("--cache-memory", "-1"))
                .contains("--cache-memory must be >= 0, not -1");
        assertThat(refusedTraining("--network", "unet3d"))
                .contains("--network unet3d: --workload images trains cnn2d or resnet18");
        MainTest.Run unet = MainTest.run("train", "--network", "resnet18", "--no-web-ui");
        assertThat(unet.status()).isEqualTo(2);
        assertThat(unet.err()).contains("--network resnet18: --workload kits19 trains unet3d");
        MainTest.Run profile =
                MainTest.run(
                        "profile",
                        "--workload",
                        "images",
                        "--data",
                        data.toString(),
                        "--tail",
                        "0.05,50");
        assertThat(profile.status()).isEqualTo(2);
        assertThat(profile.err()).contains("--tail is the kits19 bench knob");
        MainTest.Run workload = MainTest.run("train", "--workload", "audio");
        assertThat(workload.status()).isEqualTo(2);
        assertThat(workload.err()).contains("kits19", "images");
    }

    /** Main's train command on the images in {@code data}, with {@code options}. */
    private List<String> trainOnImages(String... options) {
        List<String> args =
                new java.util.ArrayList<>(
                        List.of("train", "--workload", "images", "--data", data.toString()));
        args.addAll(List.of(options));
        return args;
    }

    /** Training on the images with {@code options}, refused as a usage error: what it says. */
    private String refusedTraining(String... options) {
        List<String> args = trainOnImages(options);
        args.add("--no-web-ui");
        MainTest.Run run = MainTest.run(args.toArray(String[]::new));
        assertThat(run.status()).isEqualTo(2);
        return run.err();
    }

    /** docs/workloads.md's Java API example, as written there but small: it builds and trains. */
    @Test
    void shouldRunTheReadmesJavaApiExample() throws Exception {
        Path photos = out.resolve("photos");
        ImageSetGenerator.builder()
                .optImages(6)
                .optClasses(3)
                .optEdges(16, 40)
                .build()
                .generate(photos);
        Workload<EncodedImage> images =
                new Workload<>(
                        "images",
                        ImageFolder.scan(photos),
                        new ImageTransforms(ImageConfig.torchvision(16)));
        TrainerSink trainers =
                TrainerSink.builder()
                        .setAccelerator(
                                new DjlAccelerator.Factory(
                                        TrainingSettings.builder()
                                                .setWidth(0.25)
                                                .setLearningRate(0.002f)
                                                .optMomentum(0.9f)
                                                .optWarmUp(20, 0f)
                                                .setSeed(7)
                                                .build()
                                                .withNetwork(new ImageClassifier(3, 0.25))))
                        .optRecipe(new SampleRecipe(images))
                        .optTraceDir(out)
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        LoaderJob.builder()
                .setWorkload(images)
                .setTrainer(trainers)
                .optLoader(LoaderJob.Loader.minato)
                .optEpochs(1)
                .optBatchSize(2)
                .optDevices(1)
                .optWorkers(1, 1)
                .build()
                .build(env);
        env.execute("readme example");

        io.minato.trainer.TraceFiles.merge(out, out.resolve("trace.csv"));
        assertThat(Files.readAllLines(out.resolve("trace.csv"))).hasSize(1 + images.size());
    }
}
