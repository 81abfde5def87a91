package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import io.minato.workload.images.ImageCodecs;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.imageio.stream.MemoryCacheImageInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Folders as users have them: every format torchvision's ImageFolder reads, a non-ASCII name, CMYK
 * and YCCK JPEGs, an image that passes the start-up check but whose pixels do not decode, met while
 * the run trains, and a KiTS19 case truncated while the run trains.
 */
class RealFoldersTest {
    @TempDir Path data;
    @TempDir Path out;

    private MainTest.Run train(String onBad, int epochs) {
        return train("minato", onBad, epochs);
    }

    private MainTest.Run train(String loader, String onBad, int epochs) {
        return train(
                onBad,
                "--loader",
                loader,
                "--workload",
                "images",
                "--epochs",
                Integer.toString(epochs),
                "--accelerator",
                "simulated:1");
    }

    /**
     * A run of {@code options} on {@code data} with two workers, nothing held out, bad input
     * handled as {@code onBad}; its run folder, report and trace in {@code out}.
     */
    private MainTest.Run train(String onBad, String... options) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "train",
                                "--data",
                                data.toString(),
                                "--patch",
                                "16",
                                "--eval-cases",
                                "0",
                                "--workers",
                                "2",
                                "--on-bad-sample",
                                onBad));
        args.addAll(List.of(options));
        args.addAll(
                MainTest.quietRun(
                        out.resolve("run"), out.resolve("report.json"), out.resolve("trace.csv")));
        return MainTest.run(args.toArray(String[]::new));
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> report() throws Exception {
        return (Map<String, Object>) Json.parse(Files.readString(out.resolve("report.json")));
    }

    /** The quarantine of {@code report}, checked to hold {@code file} alone: its entry. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> quarantinedAlone(Map<String, Object> report, String file) {
        List<Map<String, Object>> quarantine = (List<Map<String, Object>>) report.get("quarantine");
        assertThat(quarantine).singleElement().extracting(q -> q.get("file")).isEqualTo(file);
        return quarantine.get(0);
    }

    /** The trace's (epoch, index) pairs, each checked to be there once, and the images named. */
    private Set<String> traced(Set<String> pairs) throws Exception {
        List<String> lines = Files.readAllLines(out.resolve("trace.csv"), StandardCharsets.UTF_8);
        Set<String> images = new HashSet<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            assertThat(pairs.add(f[0] + "," + f[1])).as("twice: %s", line).isTrue();
            images.add(f[2]);
        }
        return images;
    }

    @Test
    void shouldTrainOnEveryImageFormatAndANonAsciiName() throws Exception {
        ImageFormatFolder.write(data);

        MainTest.Run run = train("fail", 1);

        assertThat(run.status()).as(run.err()).isZero();
        Map<String, Object> r = report();
        assertThat(r.get("quarantine")).isEqualTo(List.of());
        Set<String> pairs = new HashSet<>();
        assertThat(traced(pairs)).containsExactlyInAnyOrderElementsOf(ImageFormatFolder.IMAGES);
        assertThat(pairs).hasSize(ImageFormatFolder.IMAGES.size());
    }

    @Test
    void shouldDecodeACmykJpegInItsColours() throws Exception {
        assertDecodesRed(ImageFormatFolder.cmykRed(16, 12));
        assertThat(ImageCodecs.suffixes()).contains("webp", "ppm", "pgm", "tif", "tiff");
    }

    @Test
    void shouldDecodeAYcckJpegInItsColours() throws Exception {
        assertDecodesRed(ImageFormatFolder.ycckRed(16, 12));
    }

    /** Decodes {@code jpeg}, an image all red, and checks that it comes out red. */
    private static void assertDecodesRed(byte[] jpeg) throws Exception {
        BufferedImage image =
                ImageCodecs.read(new MemoryCacheImageInputStream(new ByteArrayInputStream(jpeg)));
        int rgb = image.getRGB(5, 5);
        assertThat(rgb >> 16 & 0xFF).as("red").isGreaterThan(200);
        assertThat(rgb >> 8 & 0xFF).as("green").isLessThan(60);
        assertThat(rgb & 0xFF).as("blue").isLessThan(60);
    }

    /**
     * Trains on a KiTS19-like set and truncates {@code victim} once the trace shows the first
     * steps, while many epochs are left.
     */
    private MainTest.Run truncatedWhileTraining(String victim, String onBad) throws Exception {
        KitsLikeGenerator.builder().optCases(6).optScale(0.15).optSeed(5).build().generate(data);
        Path trace = out.resolve("run").resolve("trace-device-0.csv");
        Thread truncate =
                new Thread(
                        () -> {
                            try {
                                long deadline = System.nanoTime() + 120_000_000_000L;
                                while (!(Files.isRegularFile(trace) && Files.size(trace) > 200)
                                        && System.nanoTime() < deadline) {
                                    Thread.sleep(2);
                                }
                                try (FileChannel f =
                                        FileChannel.open(
                                                data.resolve(victim), StandardOpenOption.WRITE)) {
                                    f.truncate(1000);
                                }
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        });
        truncate.start();
        MainTest.Run run = train(onBad, "--epochs", "60", "--accelerator", "simulated:10");
        truncate.join();
        assertThat(Files.size(data.resolve(victim))).as("truncated").isEqualTo(1000);
        return run;
    }

    @Test
    void shouldQuarantineAKitsCaseTruncatedMidRunAndTrainOnUnderSkip() throws Exception {
        MainTest.Run run = truncatedWhileTraining("case_00002_x.npy", "skip");

        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.err().split("\n"))
                .filteredOn(l -> l.startsWith("skipped: "))
                .singleElement()
                .asString()
                .startsWith("skipped: " + data.resolve("case_00002_x.npy") + ": ");
        Map<String, Object> r = report();
        quarantinedAlone(r, "case_00002_x.npy");
        @SuppressWarnings("unchecked")
        Map<String, Object> samples = (Map<String, Object>) r.get("samples");
        assertThat(samples).containsEntry("quarantined", 1.0).containsEntry("dropped", 0.0);
        double delivered = (Double) samples.get("delivered");
        assertThat(delivered).isGreaterThan(0).isLessThan(6 * 60);
        Set<String> pairs = new HashSet<>();
        traced(pairs);
        assertThat(pairs).hasSize((int) delivered);
    }

    @Test
    void shouldStopInOneLineWhenAKitsCaseIsTruncatedMidRunUnderFail() throws Exception {
        MainTest.Run run = truncatedWhileTraining("case_00002_x.npy", "fail");

        assertThat(run.status()).isNotZero();
        assertThat(run.err())
                .contains("error: " + data.resolve("case_00002_x.npy") + ": ")
                .doesNotContain("\tat ");
        assertThat(out.resolve("report.json")).doesNotExist();
    }

    @ParameterizedTest
    @ValueSource(strings = {"minato", "inorder", "djl"})
    void shouldQuarantineAnImageWhosePixelsDoNotDecodeMidRunAndTrainEveryOtherSampleOnce(
            String loader) throws Exception {
        ImageFormatFolder.write(data);
        ImageFormatFolder.write(data, "a/bad.png", ImageFormatFolder.undecodablePng());
        int epochs = 3; // 3 x 12 images: whole batches of 2, none dropped by the in-order loaders

        MainTest.Run run = train(loader, "skip", epochs);

        assertThat(run.status()).as(run.err()).isZero();
        List<String> skipped = new ArrayList<>();
        for (String line : run.err().split("\n")) {
            if (line.startsWith("skipped: ")) {
                skipped.add(line);
            }
        }
        assertThat(skipped)
                .singleElement()
                .asString()
                .startsWith("skipped: " + data.resolve("a/bad.png") + ": cannot decode the image");
        Map<String, Object> r = report();
        assertThat((String) quarantinedAlone(r, "a/bad.png").get("reason"))
                .startsWith("cannot decode the image");
        int good = ImageFormatFolder.IMAGES.size();
        assertThat(r.get("samples"))
                .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                .containsEntry("quarantined", 1.0)
                .containsEntry("delivered", (double) epochs * good)
                .containsEntry("dropped", 0.0);
        Set<String> pairs = new HashSet<>();
        assertThat(traced(pairs))
                .doesNotContain("a/bad.png")
                .containsExactlyInAnyOrderElementsOf(ImageFormatFolder.IMAGES);
        assertThat(pairs).hasSize(epochs * good);
    }

    @ParameterizedTest
    @ValueSource(strings = {"minato", "inorder", "djl"})
    void shouldStopInOneLineWhenAnImageDoesNotDecodeMidRunUnderFail(String loader)
            throws Exception {
        ImageFormatFolder.write(data);
        ImageFormatFolder.write(data, "a/bad.png", ImageFormatFolder.undecodablePng());

        MainTest.Run run = train(loader, "fail", 2);

        assertThat(run.status()).isNotZero();
        assertThat(run.err())
                .contains("error: " + data.resolve("a/bad.png") + ": cannot decode the image")
                .doesNotContain("\tat ");
        assertThat(out.resolve("report.json")).doesNotExist();
    }
}
