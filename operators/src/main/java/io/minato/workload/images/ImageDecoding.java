package io.minato.workload.images;

import io.minato.data.BadInputException;
import java.awt.image.BufferedImage;
import java.awt.image.WritableRaster;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import javax.imageio.stream.ImageInputStream;
import javax.imageio.stream.MemoryCacheImageInputStream;

/**
 * An encoded image to pixels: any format {@link ImageCodecs} reads, checked against {@link
 * ImageFolder#MAX_PIXELS}, then packed as 0xRRGGBB the way PIL's {@code convert("RGB")} gives them.
 */
final class ImageDecoding {
    private ImageDecoding() {}

    /**
     * The image as 0xRRGGBB. A grey image's samples are taken as they are, replicated to the three
     * channels, as PIL's convert("RGB") does: {@code getRGB} would first convert Java's linear grey
     * colour space to sRGB (200 became 229).
     */
    static int[] pixels(BufferedImage image) {
        int w = image.getWidth();
        int h = image.getHeight();
        int type = image.getType();
        if (type == BufferedImage.TYPE_BYTE_GRAY || type == BufferedImage.TYPE_USHORT_GRAY) {
            int shift = type == BufferedImage.TYPE_USHORT_GRAY ? 8 : 0;
            int[] grey = image.getRaster().getSamples(0, 0, w, h, 0, (int[]) null);
            for (int i = 0; i < grey.length; i++) {
                int g = (grey[i] >>> shift) & 0xFF;
                grey[i] = g << 16 | g << 8 | g;
            }
            return grey;
        }
        if (type == BufferedImage.TYPE_3BYTE_BGR
                || type == BufferedImage.TYPE_4BYTE_ABGR
                || type == BufferedImage.TYPE_INT_RGB
                || type == BufferedImage.TYPE_INT_ARGB
                || type == BufferedImage.TYPE_INT_BGR) {
            return packedRgb(image.getRaster(), w, h);
        }
        return image.getRGB(0, 0, w, h, null, 0, w);
    }

    /**
     * The pixels of an 8-bit sRGB raster whose first three bands are red, green and blue (alpha, if
     * any, not premultiplied): what {@code getRGB} gives for these types, without its colour-model
     * call per pixel, which took a third of a large PNG's decode.
     */
    private static int[] packedRgb(WritableRaster raster, int w, int h) {
        int bands = raster.getNumBands();
        int[] row = new int[w * bands];
        int[] rgb = new int[w * h];
        for (int y = 0, o = 0; y < h; y++) {
            raster.getPixels(0, y, w, 1, row);
            for (int i = 0; i < row.length; i += bands) {
                rgb[o++] = row[i] << 16 | row[i + 1] << 8 | row[i + 2];
            }
        }
        return rgb;
    }

    /**
     * Decodes any format {@link ImageCodecs} reads; a corrupt image is one line naming its file.
     */
    static BufferedImage decodeImage(EncodedImage source) throws BadInputException {
        BufferedImage image;
        // Cached in memory (ImageIO.read(InputStream) caches in a temporary file).
        try (ImageInputStream in =
                new MemoryCacheImageInputStream(new ByteArrayInputStream(source.bytes()))) {
            image = ImageCodecs.read(in);
        } catch (IOException | RuntimeException e) {
            throw new BadInputException(
                    source.file().file(),
                    "cannot decode the image (" + ImageFolder.oneLine(e) + ")",
                    e);
        }
        if (image == null) {
            throw new BadInputException(source.file().file(), "not an image ImageIO can read");
        }
        if ((long) image.getWidth() * image.getHeight() > ImageFolder.MAX_PIXELS) {
            throw new BadInputException(
                    source.file().file(),
                    "image of "
                            + image.getWidth()
                            + "x"
                            + image.getHeight()
                            + " pixels is larger than the "
                            + ImageFolder.MAX_PIXELS
                            + " a sample may have");
        }
        return image;
    }
}
