package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.awt.image.DataBuffer;
import java.awt.image.Raster;
import java.awt.image.WritableRaster;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import javax.imageio.IIOImage;
import javax.imageio.ImageIO;
import javax.imageio.ImageWriter;
import javax.imageio.stream.ImageOutputStream;

/**
 * A tiny image folder in every format torchvision's ImageFolder takes, some extensions in upper
 * case, one non-ASCII name and one CMYK JPEG (Adobe's inverted CMYK, all red).
 */
final class ImageFormatFolder {
    /** An 8x8 lossless WebP written by cwebp: no Java library here writes WebP. */
    private static final String WEBP =
            "UklGRi4AAABXRUJQVlA4TCIAAAAvB8ABAJkyRPQ/NhHR/wBhtlFRzp9zryMYkAGMCaB6oP8A";

    static final String NON_ASCII = "b/caf\u00e9-\u732b.png";

    static final String CMYK = "b/cmyk.jpg";

    /** Every image the folder holds, relative to it. */
    static final List<String> IMAGES =
            List.of(
                    "a/1.jpg",
                    "a/2.JPEG",
                    "a/3.png",
                    "a/4.ppm",
                    "a/5.bmp",
                    "a/6.pgm",
                    "b/7.tif",
                    "b/8.TIFF",
                    "b/9.webp",
                    NON_ASCII,
                    CMYK);

    private ImageFormatFolder() {}

    static Path write(Path dir) throws IOException {
        BufferedImage rgb = new BufferedImage(24, 20, BufferedImage.TYPE_3BYTE_BGR);
        for (int y = 0; y < rgb.getHeight(); y++) {
            for (int x = 0; x < rgb.getWidth(); x++) {
                rgb.setRGB(x, y, (x * 10) << 16 | (y * 12) << 8 | 0x60);
            }
        }
        BufferedImage grey = new BufferedImage(20, 24, BufferedImage.TYPE_BYTE_GRAY);
        grey.getGraphics().drawImage(rgb, 0, 0, null);
        write(dir, "a/1.jpg", encode(rgb, "jpg"));
        write(dir, "a/2.JPEG", encode(rgb, "jpeg"));
        write(dir, "a/3.png", encode(rgb, "png"));
        write(dir, "a/4.ppm", encode(rgb, "pnm"));
        write(dir, "a/5.bmp", encode(rgb, "bmp"));
        write(dir, "a/6.pgm", encode(grey, "pnm"));
        write(dir, "b/7.tif", encode(rgb, "tiff"));
        write(dir, "b/8.TIFF", encode(grey, "tiff"));
        write(dir, "b/9.webp", Base64.getDecoder().decode(WEBP));
        write(dir, NON_ASCII, encode(rgb, "png"));
        write(dir, CMYK, cmykRed(16, 12));
        return dir;
    }

    static void write(Path dir, String name, byte[] bytes) throws IOException {
        Path f = dir.resolve(name);
        Files.createDirectories(f.getParent());
        Files.write(f, bytes);
    }

    static byte[] encode(BufferedImage image, String format) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertThat(ImageIO.write(image, format, out)).as(format).isTrue();
        return out.toByteArray();
    }

    /**
     * A CMYK JPEG as Photoshop writes them: four channels, stored inverted, and the Adobe APP14
     * segment (transform 0) that says so. Pure red is C 0, M 1, Y 1, K 0.
     */
    static byte[] cmykRed(int w, int h) throws IOException {
        return adobe(w, h, new int[] {255, 0, 0, 255}, 0);
    }

    /**
     * A YCCK JPEG as Photoshop writes them: the inverted CMY of {@link #cmykRed} taken as RGB and
     * stored as YCbCr, K as it is, and the Adobe APP14 segment with transform 2. Red's inverted CMY
     * (255, 0, 0) read as RGB is (0, 255, 255): Y 179, Cb 171, Cr 0.
     */
    static byte[] ycckRed(int w, int h) throws IOException {
        return adobe(w, h, new int[] {179, 171, 0, 255}, 2);
    }

    /** A four-channel JPEG of one colour, stored as given, with an Adobe segment's transform. */
    private static byte[] adobe(int w, int h, int[] pixel, int transform) throws IOException {
        WritableRaster raster = Raster.createInterleavedRaster(DataBuffer.TYPE_BYTE, w, h, 4, null);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                raster.setPixel(x, y, pixel);
            }
        }
        ImageWriter writer = ImageIO.getImageWritersByFormatName("jpeg").next();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ImageOutputStream out = ImageIO.createImageOutputStream(bytes)) {
            writer.setOutput(out);
            writer.write(null, new IIOImage(raster, null, null), null);
        } finally {
            writer.dispose();
        }
        byte[] jpeg = bytes.toByteArray();
        byte[] adobe = {
            (byte) 0xFF,
            (byte) 0xEE,
            0,
            14,
            'A',
            'd',
            'o',
            'b',
            'e',
            0,
            100,
            0,
            0,
            0,
            0,
            (byte) transform
        };
        byte[] out = new byte[jpeg.length + adobe.length];
        System.arraycopy(jpeg, 0, out, 0, 2);
        System.arraycopy(adobe, 0, out, 2, adobe.length);
        System.arraycopy(jpeg, 2, out, 2 + adobe.length, jpeg.length - 2);
        return out;
    }

    /**
     * A PNG whose header is sound (it passes the start-up check) but whose pixel data is not: its
     * IDAT chunk's compressed bytes are overwritten.
     */
    static byte[] undecodablePng() throws IOException {
        BufferedImage image = new BufferedImage(20, 20, BufferedImage.TYPE_3BYTE_BGR);
        byte[] png = encode(image, "png");
        int idat = indexOf(png, new byte[] {'I', 'D', 'A', 'T'});
        assertThat(idat).isPositive();
        for (int i = idat + 4; i < Math.min(png.length - 12, idat + 40); i++) {
            png[i] = (byte) 0xA5;
        }
        return png;
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
