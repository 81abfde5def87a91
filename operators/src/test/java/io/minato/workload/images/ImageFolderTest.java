package io.minato.workload.images;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The class/image layout: what is an image, in which order, and every way a folder is wrong. */
class ImageFolderTest {

    @TempDir Path dir;

    static byte[] encode(BufferedImage image, String format) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertThat(ImageIO.write(image, format, out)).isTrue();
        return out.toByteArray();
    }

    static BufferedImage rgb(int w, int h) {
        BufferedImage image = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                image.setRGB(x, y, (x * 7 & 0xFF) << 16 | (y * 5 & 0xFF) << 8 | 0x40);
            }
        }
        return image;
    }

    private Path write(String name, byte[] bytes) throws IOException {
        Path f = dir.resolve(name);
        Files.createDirectories(f.getParent());
        return Files.write(f, bytes);
    }

    @Test
    void shouldNumberClassesByFolderNameAndSortImagesIgnoringOtherFiles() throws Exception {
        byte[] png = encode(rgb(8, 6), "png");
        write("zebra/b.PNG", png);
        write("zebra/a.jpg", encode(rgb(8, 6), "jpg"));
        write("ant/2.bmp", encode(rgb(5, 5), "bmp"));
        write("ant/1.gif", encode(rgb(5, 5), "gif"));
        write("ant/.hidden.png", png);
        write("ant/notes.txt", "not an image".getBytes());
        write("ant/deeper/3.png", png);
        write(".cache/x.png", png);
        write("loose.png", png);

        ImageFolder f = ImageFolder.scan(dir);

        assertThat(f.classes()).containsExactly("ant", "zebra");
        assertThat(f.images())
                .extracting(ImageFile::name, ImageFile::label)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("ant/1.gif", 0),
                        org.assertj.core.groups.Tuple.tuple("ant/2.bmp", 0),
                        org.assertj.core.groups.Tuple.tuple("zebra/a.jpg", 1),
                        org.assertj.core.groups.Tuple.tuple("zebra/b.PNG", 1));
        assertThat(f.traceName(2)).isEqualTo("zebra/a.jpg");
        for (int i = 0; i < f.size(); i++) {
            f.check(i);
            assertThat(f.open(i).bytes()).isEqualTo(Files.readAllBytes(f.images().get(i).file()));
        }
    }

    @Test
    void shouldNameTheFolderThatIsMissingEmptyOrHasAClassWithoutImages() throws Exception {
        assertThatThrownBy(() -> ImageFolder.scan(dir.resolve("nope")))
                .isInstanceOf(BadInputException.class)
                .hasMessage(
                        dir.resolve("nope")
                                + ": no such folder; give --data a folder of class"
                                + " folders of images");
        assertThatThrownBy(() -> ImageFolder.scan(dir))
                .hasMessage(dir + ": no class folders; images go in DIR/<class>/<image>.jpg");
        write("cats/a.png", encode(rgb(4, 4), "png"));
        write("dogs/readme.txt", "x".getBytes());
        assertThatThrownBy(() -> ImageFolder.scan(dir))
                .hasMessage(
                        dir.resolve("dogs")
                                + ": class folder holds no image (bmp, gif, jpeg, jpg, pgm, png, ppm,"
                                + " tif, tiff, webp)");
    }

    @Test
    void shouldCheckHeadersAndNameEveryUnreadableImage() throws Exception {
        byte[] png = encode(rgb(16, 16), "png");
        write("a/empty.png", new byte[0]);
        write("a/text.jpg", "this is not a JPEG at all".getBytes());
        write("a/truncated.png", Arrays.copyOf(png, 20));
        write("a/fine.png", png);
        ImageFolder f = ImageFolder.scan(dir);
        assertThat(f.images())
                .extracting(ImageFile::name)
                .containsExactly("a/empty.png", "a/fine.png", "a/text.jpg", "a/truncated.png");

        assertThatThrownBy(() -> f.check(0))
                .isInstanceOf(BadInputException.class)
                .hasMessage(f.images().get(0).path() + ": empty file");
        f.check(1);
        assertThatThrownBy(() -> f.check(2))
                .hasMessage(f.images().get(2).path() + ": not an image ImageIO can read");
        assertThatThrownBy(() -> f.check(3))
                .hasMessageStartingWith(f.images().get(3).path() + ": unreadable image header (")
                .hasMessageNotContaining("\n");
        Files.delete(f.images().get(1).file());
        assertThatThrownBy(() -> f.check(1))
                .hasMessage(f.images().get(1).path() + ": no such file");
        assertThatThrownBy(() -> f.open(1)).hasMessage(f.images().get(1).path() + ": no such file");
    }

    @Test
    void shouldHoldOutImagesSpreadOverTheClassesKeepingOnePerClass() throws Exception {
        byte[] png = encode(rgb(4, 4), "png");
        for (String n : new String[] {"a/1", "a/2", "a/3", "a/4", "b/1", "b/2", "c/1"}) {
            write(n + ".png", png);
        }
        ImageFolder f = ImageFolder.scan(dir);

        ImageFolder.Split split = f.split(3);

        assertThat(split.eval())
                .extracting(ImageFile::name)
                .containsExactly("a/3.png", "a/4.png", "b/2.png");
        assertThat(split.train().images())
                .extracting(ImageFile::name)
                .containsExactly("a/1.png", "a/2.png", "b/1.png", "c/1.png");
        assertThat(split.train().classes()).containsExactly("a", "b", "c");
        assertThat(f.split(0).train().size()).isEqualTo(7);
        assertThatThrownBy(() -> f.split(5))
                .isInstanceOf(BadInputException.class)
                .hasMessage(
                        dir
                                + ": cannot hold out 5 of 7 images for evaluation; every class"
                                + " must keep one to train on (at most 4)");
    }
}
