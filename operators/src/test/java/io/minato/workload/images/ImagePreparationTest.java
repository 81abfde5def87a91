package io.minato.workload.images;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import io.minato.spi.FileMemo;
import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.SampleRandom;
import io.minato.spi.Shape3;
import io.minato.spi.Steps;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** torchvision's training transforms as resumable steps: values, resumption, and bad images. */
class ImagePreparationTest {

    private static final ImageConfig CONFIG = ImageConfig.torchvision(16).withPixelsPerStep(40);

    private static EncodedImage image(BufferedImage image, String format, int label)
            throws IOException {
        return new EncodedImage(
                new ImageFile("/data/c/x." + format, "c/x." + format, label),
                ImageFolderTest.encode(image, format));
    }

    private static byte[] bytes(Steps<EncodedImage> s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        s.writeTo(new DataOutputStream(out));
        return out.toByteArray();
    }

    private static ImagePreparation roundTrip(Steps<EncodedImage> s, ImageConfig config)
            throws IOException {
        return (ImagePreparation)
                new ImageTransforms(config)
                        .read(new DataInputStream(new ByteArrayInputStream(bytes(s))));
    }

    @Test
    void shouldEndAsTheSameBytesWhenWrittenAndReadBackAtEveryStep() throws Exception {
        ImageTransforms transforms = new ImageTransforms(CONFIG);
        EncodedImage png = image(ImageFolderTest.rgb(37, 23), "png", 3);
        EncodedImage jpg = image(ImageFolderTest.rgb(50, 61), "jpg", 1);
        for (EncodedImage source : new EncodedImage[] {png, jpg}) {
            for (long index = 0; index < 6; index++) {
                SampleKey key = new SampleKey(5, 2, index);
                Steps<EncodedImage> straight = transforms.start(key);
                int steps = 0;
                while (!straight.isDone()) {
                    straight.advance(source);
                    steps++;
                }
                for (int stop = 0; stop < steps; stop++) {
                    Steps<EncodedImage> resumed = transforms.start(key);
                    for (int i = 0; i < stop; i++) {
                        resumed.advance(source);
                    }
                    resumed =
                            transforms.read(
                                    new DataInputStream(new ByteArrayInputStream(bytes(resumed))));
                    while (!resumed.isDone()) {
                        resumed.advance(source);
                    }
                    assertThat(resumed.result().sameContent(straight.result()))
                            .as(
                                    "%s sample %d resumed after step %d",
                                    source.file().name(), index, stop)
                            .isTrue();
                }
                assertThat(straight.result().shape()).isEqualTo(new Shape3(3, 16, 16));
                assertThat(straight.result().classIndex()).isEqualTo(source.file().label());
                assertThat(steps).as("the resize in slabs").isGreaterThan(8);
            }
        }
    }

    private static Patch finish(Steps<EncodedImage> s, EncodedImage source)
            throws BadInputException {
        while (!s.isDone()) {
            s.advance(source);
        }
        return s.result();
    }

    /**
     * Issue 16's bit-identity for the images: every sample is the same bytes whether its image was
     * decoded for it (memo off, or cold) or remembered from an earlier epoch, also when the sample
     * was cut off after any step and continued from its state's bytes.
     */
    @Test
    void shouldGiveTheSameBytesWithDecodedImagesRememberedColdWarmOrNot(@TempDir Path dir)
            throws Exception {
        FileMemo.clear(ImageTransforms.DECODED);
        List<ImageFile> files = new ArrayList<>();
        String[] formats = {"png", "jpg", "bmp"};
        for (int i = 0; i < 3; i++) {
            Path f = dir.resolve("c/" + i + "." + formats[i]);
            Files.createDirectories(f.getParent());
            Files.write(f, ImageFolderTest.encode(ImageFolderTest.rgb(31 + 9 * i, 27), formats[i]));
            files.add(new ImageFile(f.toString(), "c/" + i + "." + formats[i], i));
        }
        ImageTransforms off = new ImageTransforms(CONFIG).withMemoBound(0);
        ImageTransforms memo = new ImageTransforms(CONFIG);
        for (int epoch = 0; epoch < 3; epoch++) {
            for (int i = 0; i < files.size(); i++) {
                SampleKey key = new SampleKey(5, epoch, i);
                Patch decoded = finish(off.start(key), new EncodedImage(files.get(i)));
                Patch remembered = finish(memo.start(key), new EncodedImage(files.get(i)));
                assertThat(remembered.sameContent(decoded))
                        .as("epoch %d image %d", epoch, i)
                        .isTrue();
            }
        }
        assertThat(memo.memo().misses()).as("each image decoded once").isEqualTo(3);
        assertThat(memo.memo().hits()).isEqualTo(6);
        assertThat(memo.memo().bytes()).isGreaterThanOrEqualTo(4L * 27 * (31 + 40 + 49));
        assertThat(off.memo().hits()).isZero();

        for (int i = 0; i < files.size(); i++) {
            SampleKey key = new SampleKey(5, 7, i);
            Patch decoded = finish(off.start(key), new EncodedImage(files.get(i)));
            for (int stop = 1; ; stop++) {
                Steps<EncodedImage> cut = memo.start(key);
                for (int s = 0; s < stop && !cut.isDone(); s++) {
                    cut.advance(new EncodedImage(files.get(i)));
                }
                if (cut.isDone()) {
                    break;
                }
                assertThat(cut.heldBytes())
                        .as("pixels shared with the memo are not this sample's")
                        .isLessThan(4L * 27 * 31);
                Steps<EncodedImage> resumed =
                        off.read(new DataInputStream(new ByteArrayInputStream(bytes(cut))));
                assertThat(finish(resumed, new EncodedImage(files.get(i))).sameContent(decoded))
                        .as("image %d cut off after step %d", i, stop)
                        .isTrue();
            }
        }
    }

    /**
     * The raster read without getRGB's colour model gives getRGB's red, green and blue for every
     * type it is used on, also as ImageIO's readers decode PNG, JPEG and BMP files.
     */
    @Test
    void shouldReadTheSameRgbAsGetRgbForEveryTypeReadFromItsRaster() throws Exception {
        java.util.Random random = new java.util.Random(11);
        int[] types = {
            BufferedImage.TYPE_3BYTE_BGR,
            BufferedImage.TYPE_4BYTE_ABGR,
            BufferedImage.TYPE_INT_RGB,
            BufferedImage.TYPE_INT_ARGB,
            BufferedImage.TYPE_INT_BGR
        };
        List<BufferedImage> images = new ArrayList<>();
        for (int type : types) {
            BufferedImage img = new BufferedImage(13, 7, type);
            for (int y = 0; y < 7; y++) {
                for (int x = 0; x < 13; x++) {
                    img.setRGB(x, y, random.nextInt() | 0xFF000000);
                }
            }
            images.add(img);
            for (String format : new String[] {"png", "jpg", "bmp"}) {
                if (format.equals("png") || !img.getColorModel().hasAlpha()) {
                    images.add(ImageDecoding.decodeImage(image(img, format, 0)));
                }
            }
        }
        for (BufferedImage img : images) {
            int[] expected = img.getRGB(0, 0, 13, 7, null, 0, 13);
            int[] actual = ImageDecoding.pixels(img);
            for (int i = 0; i < expected.length; i++) {
                assertThat(actual[i] & 0xFFFFFF)
                        .as("type %d pixel %d", img.getType(), i)
                        .isEqualTo(expected[i] & 0xFFFFFF);
            }
        }
    }

    /** No crop, flip or jitter: each value is the pixel over 255, normalised. */
    @Test
    void shouldGiveThePixelsNormalisedWhenNothingRandomApplies() throws Exception {
        ImageConfig plain =
                new ImageConfig(8, 1, 1, 1, 1, 0, 0, 0, 0, 0.5, 0.25, 0.125, 0.5, 0.25, 2, 1 << 10);
        BufferedImage img = ImageFolderTest.rgb(8, 8);
        Patch p =
                new ImageTransforms(plain).start(new SampleKey(1, 0, 0))
                                instanceof ImagePreparation s
                        ? run(s, image(img, "png", 0))
                        : null;
        for (int y = 0; y < 8; y++) {
            for (int x = 0; x < 8; x++) {
                int px = img.getRGB(x, y);
                assertThat(p.image()[y * 8 + x])
                        .isEqualTo((((px >> 16) & 0xFF) / 255f - 0.5f) * 2f);
                assertThat(p.image()[64 + y * 8 + x])
                        .isEqualTo((((px >> 8) & 0xFF) / 255f - 0.25f) * 4f);
                assertThat(p.image()[128 + y * 8 + x])
                        .isEqualTo(((px & 0xFF) / 255f - 0.125f) * 0.5f);
            }
        }
        ImageConfig flipped =
                new ImageConfig(8, 1, 1, 1, 1, 1, 0, 0, 0, 0.5, 0.25, 0.125, 0.5, 0.25, 2, 1 << 10);
        Patch q =
                run(
                        (ImagePreparation)
                                new ImageTransforms(flipped).start(new SampleKey(1, 0, 0)),
                        image(img, "png", 0));
        for (int c = 0; c < 3; c++) {
            for (int y = 0; y < 8; y++) {
                for (int x = 0; x < 8; x++) {
                    assertThat(q.image()[c * 64 + y * 8 + x])
                            .isEqualTo(p.image()[c * 64 + y * 8 + 7 - x]);
                }
            }
        }
    }

    private static Patch run(ImagePreparation s, EncodedImage source) throws BadInputException {
        while (!s.isDone()) {
            s.advance(source);
        }
        return s.result();
    }

    @Test
    void shouldCropLikeTorchvisionTryingTenTimesThenTheCentre() {
        ImageConfig tight =
                new ImageConfig(8, 0.9, 1, 3.0 / 4, 4.0 / 3, 0.5, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1);
        // A 100 x 10 image: no window of 90 % of its area fits 10 rows, so the centre crop of the
        // widest ratio allowed: 10 rows, rint(10 * 4/3) = 13 columns.
        int[] w =
                ImagePreparation.cropWindow(
                        100,
                        10,
                        tight,
                        SampleRandom.of(new SampleKey(1, 1, 1), SampleRandom.Stream.IMAGE_CROP, 0));
        assertThat(w).containsExactly(0, 43, 10, 13);
        for (long i = 0; i < 200; i++) {
            int[] c =
                    ImagePreparation.cropWindow(
                            64,
                            48,
                            CONFIG,
                            SampleRandom.of(
                                    new SampleKey(1, 1, i), SampleRandom.Stream.IMAGE_CROP, 0));
            assertThat(c[0]).isBetween(0, 48 - c[2]);
            assertThat(c[1]).isBetween(0, 64 - c[3]);
            double area = (double) c[2] * c[3] / (64 * 48);
            assertThat(area).isBetween(0.05, 1.0);
        }
    }

    @Test
    void shouldDecodeGreyPaletteAndAlphaImagesAsRgb() throws Exception {
        ImageConfig plain = new ImageConfig(4, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1 << 10);
        BufferedImage grey = new BufferedImage(4, 4, BufferedImage.TYPE_BYTE_GRAY);
        grey.getRaster().setSample(1, 2, 0, 200);
        Patch g =
                run(
                        (ImagePreparation) new ImageTransforms(plain).start(new SampleKey(0, 0, 0)),
                        image(grey, "png", 0));
        assertThat(new float[] {g.image()[9], g.image()[16 + 9], g.image()[32 + 9]})
                .containsOnly(200 / 255f);

        BufferedImage indexed = new BufferedImage(4, 4, BufferedImage.TYPE_BYTE_INDEXED);
        indexed.setRGB(3, 3, 0xFFFF0000);
        Patch i =
                run(
                        (ImagePreparation) new ImageTransforms(plain).start(new SampleKey(0, 0, 0)),
                        image(indexed, "png", 0)); // a palette PNG
        assertThat(i.image()[15]).isEqualTo(1f);
        assertThat(i.image()[16 + 15]).isZero();

        BufferedImage alpha = new BufferedImage(4, 4, BufferedImage.TYPE_INT_ARGB);
        alpha.setRGB(0, 0, 0x1000FF00);
        Patch a =
                run(
                        (ImagePreparation) new ImageTransforms(plain).start(new SampleKey(0, 0, 0)),
                        image(alpha, "png", 0));
        assertThat(a.image()[16]).as("green, whatever its alpha").isEqualTo(1f);
    }

    @Test
    void shouldNameTheFileOfAnImageThatDoesNotDecode() throws Exception {
        EncodedImage text =
                new EncodedImage(
                        new ImageFile("/data/c/bad.jpg", "c/bad.jpg", 0),
                        "no image here".getBytes());
        Steps<EncodedImage> s = new ImageTransforms(CONFIG).start(new SampleKey(0, 0, 0));
        assertThatThrownBy(() -> s.advance(text))
                .isInstanceOf(BadInputException.class)
                .hasMessage("/data/c/bad.jpg: not an image ImageIO can read");
        byte[] png = ImageFolderTest.encode(ImageFolderTest.rgb(30, 30), "png");
        EncodedImage cut =
                new EncodedImage(
                        new ImageFile("/data/c/cut.png", "c/cut.png", 0),
                        java.util.Arrays.copyOf(png, png.length / 2));
        assertThatThrownBy(
                        () ->
                                new ImageTransforms(CONFIG)
                                        .start(new SampleKey(0, 0, 0))
                                        .advance(cut))
                .isInstanceOf(BadInputException.class)
                .hasMessageStartingWith("/data/c/cut.png: ")
                .hasMessageNotContaining("\n");
    }

    @Test
    void shouldCountTheDecodedPixelsUntilTheResizeEndsAndRefuseACorruptState() throws Exception {
        EncodedImage source = image(ImageFolderTest.rgb(40, 30), "png", 0);
        ImagePreparation p =
                (ImagePreparation) new ImageTransforms(CONFIG).start(new SampleKey(0, 0, 0));
        p.advance(source);
        assertThat(p.step()).isEqualTo(ImagePreparation.Step.CROP);
        assertThat(p.heldBytes()).isGreaterThanOrEqualTo(4L * 40 * 30);
        while (p.step() != ImagePreparation.Step.FLIP) {
            p.advance(source);
        }
        assertThat(p.heldBytes()).isEqualTo(256 + 4L * 3 * 16 * 16 + 4);
        assertThat(roundTrip(p, CONFIG).heldBytes()).isEqualTo(p.heldBytes());

        byte[] state = bytes(p);
        state[0] = 9;
        assertThatThrownBy(
                        () ->
                                new ImageTransforms(CONFIG)
                                        .read(new DataInputStream(new ByteArrayInputStream(state))))
                .isInstanceOf(IOException.class)
                .hasMessage("unknown image preparation state format 9");
    }

    @Test
    void shouldPrepareAHeldOutImageByTheEvaluationRecipe() throws Exception {
        Patch p = ImageTransforms.evaluation(image(ImageFolderTest.rgb(60, 40), "png", 2), CONFIG);
        assertThat(p.shape()).isEqualTo(new Shape3(3, 16, 16));
        assertThat(p.classIndex()).isEqualTo(2);
        for (float v : p.image()) {
            assertThat(v).isBetween(-2.2f, 2.7f);
        }
        Patch again =
                ImageTransforms.evaluation(image(ImageFolderTest.rgb(60, 40), "png", 2), CONFIG);
        assertThat(again.sameContent(p)).isTrue();
    }
}
