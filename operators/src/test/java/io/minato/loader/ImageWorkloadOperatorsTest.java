package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import io.minato.spi.Workload;
import io.minato.workload.images.EncodedImage;
import io.minato.workload.images.ImageConfig;
import io.minato.workload.images.ImageFolder;
import io.minato.workload.images.ImageTransforms;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operators on the second workload, through the SPI alone: every image cut off on a fast worker
 * crosses to the slow path as its state's bytes and ends as the bytes one pass gives.
 */
class ImageWorkloadOperatorsTest {

    @TempDir Path dir;

    @Test
    void shouldSendImagesPastTheDeadlineToTheSlowPathAndFinishThemBitIdentically()
            throws Exception {
        for (int i = 0; i < 6; i++) {
            BufferedImage image =
                    new BufferedImage(30 + 7 * i, 20 + 5 * i, BufferedImage.TYPE_INT_RGB);
            for (int y = 0; y < image.getHeight(); y++) {
                for (int x = 0; x < image.getWidth(); x++) {
                    image.setRGB(x, y, (x * 9 + i) << 16 | (y * 11) << 8 | (x + y));
                }
            }
            Path f = dir.resolve((i % 2 == 0 ? "even" : "odd") + "/img" + i + ".png");
            Files.createDirectories(f.getParent());
            ImageIO.write(image, "png", f.toFile());
        }
        Workload<EncodedImage> workload =
                new Workload<>(
                        "images",
                        ImageFolder.scan(dir),
                        new ImageTransforms(ImageConfig.torchvision(16).withPixelsPerStep(32)));
        List<UnfinishedSample> unfinished = new ArrayList<>();
        try (var h =
                LoaderOperatorsTest.opened(
                        new AugmentOperator(workload, TimeoutPolicy.parse("0.000001"), 2))) {
            for (int i = 0; i < 6; i++) {
                h.processElement(new SampleTask(9, 1, i, i), i);
            }
            assertThat(h.extractOutputValues()).isEmpty();
            for (StreamRecord<UnfinishedSample> r : h.getSideOutput(AugmentOperator.SLOW)) {
                unfinished.add(r.getValue());
            }
        }
        assertThat(unfinished).hasSize(6).allMatch(u -> u.state() != null);

        try (var h = LoaderOperatorsTest.opened(new SlowPath(workload, 2))) {
            for (UnfinishedSample u : unfinished) {
                h.processElement(u, 0);
            }
            List<PreparedSample> done = h.extractOutputValues();
            assertThat(done).hasSize(6).allMatch(s -> s.path() == SamplePath.SLOW);
            for (PreparedSample s : done) {
                Patch expected = workload.prepare(s.task().key(), s.task().caseIndex());
                assertThat(s.patch().sameContent(expected)).as("sample %s", s.task()).isTrue();
                assertThat(s.patch().classIndex()).isEqualTo(s.task().caseIndex() < 3 ? 0 : 1);
            }
        }
    }
}
