package io.minato.job.generate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.workload.images.ImageFile;
import io.minato.workload.images.ImageFolder;
import io.minato.workload.images.ImageSetGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The generated image set: its layout, its spread of sizes and formats, and its determinism. */
class ImageSetGeneratorTest {

    @TempDir Path dir;

    private static ImageSetGenerator small(long seed) {
        return ImageSetGenerator.builder()
                .optImages(9)
                .optClasses(3)
                .optSeed(seed)
                .optEdges(16, 96)
                .build();
    }

    @Test
    void shouldWriteTheSameBytesForTheSameSeedAndOthersForAnother() throws Exception {
        List<ImageSetGenerator.GeneratedImage> a = small(5).generate(dir.resolve("a"));
        small(5).generate(dir.resolve("b"));
        small(6).generate(dir.resolve("c"));
        int differ = 0;
        for (ImageSetGenerator.GeneratedImage g : a) {
            Path rel = dir.resolve("a").relativize(g.file());
            assertThat(Files.readAllBytes(dir.resolve("b").resolve(rel)))
                    .as("%s", rel)
                    .isEqualTo(Files.readAllBytes(g.file()));
            if (!java.util.Arrays.equals(
                    Files.readAllBytes(dir.resolve("c").resolve(rel)),
                    Files.readAllBytes(g.file()))) {
                differ++;
            }
        }
        assertThat(differ).isEqualTo(a.size());
    }

    @Test
    void shouldWriteAClassFolderLayoutThatScansAndDecodes() throws Exception {
        List<ImageSetGenerator.GeneratedImage> written = small(7).generate(dir);

        ImageFolder f = ImageFolder.scan(dir);

        assertThat(f.classes()).containsExactly("class_00", "class_01", "class_02");
        assertThat(f.images())
                .extracting(ImageFile::name)
                .contains("class_00/img_00000.png", "class_01/img_00001.jpg");
        assertThat(f.size()).isEqualTo(9);
        for (int i = 0; i < f.size(); i++) {
            f.check(i);
        }
        for (ImageSetGenerator.GeneratedImage g : written) {
            var image = ImageIO.read(g.file().toFile());
            assertThat(image.getWidth()).isEqualTo(g.width()).isBetween(1, 96);
            assertThat(image.getHeight()).isEqualTo(g.height()).isBetween(1, 96);
            assertThat(g.label())
                    .isEqualTo(f.classes().indexOf(g.file().getParent().getFileName().toString()));
        }
        assertThat(
                        written.stream()
                                .mapToInt(ImageSetGenerator.GeneratedImage::width)
                                .distinct()
                                .count())
                .as("sizes spread")
                .isGreaterThan(3);
    }

    @Test
    void shouldRefuseFewerImagesThanClasses() {
        assertThatThrownBy(() -> ImageSetGenerator.builder().optImages(2).optClasses(3).build())
                .hasMessage("3 classes need at least as many images, not 2");
        assertThatThrownBy(() -> ImageSetGenerator.builder().optClasses(1))
                .hasMessage("classes must be >= 2: 1");
    }
}
