package io.minato.workload.images;

import io.minato.data.BadInputException;
import io.minato.spi.FileMemo;
import io.minato.spi.MemoStats;
import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.Shape3;
import io.minato.spi.Steps;
import io.minato.spi.Transforms;
import java.awt.image.BufferedImage;
import java.io.DataInput;
import java.io.IOException;
import java.util.Objects;

/**
 * torchvision's ImageNet training transforms ({@link ImagePreparation}) as a workload's. Decoded
 * images are remembered ({@value #DECODED}) up to a quarter of the heap unless told otherwise.
 */
public final class ImageTransforms implements Transforms<EncodedImage> {
    private static final long serialVersionUID = 1L;

    /** The name of the memo of decoded images. */
    public static final String DECODED = "images.decoded";

    private final ImageConfig config;
    private final FileMemo<ImagePreparation.Decoded> decoded;

    public ImageTransforms(ImageConfig config) {
        this(config, FileMemo.declare(DECODED, ImagePreparation.Decoded::bytes));
    }

    private ImageTransforms(ImageConfig config, FileMemo<ImagePreparation.Decoded> decoded) {
        this.config = Objects.requireNonNull(config, "config");
        this.decoded = decoded;
    }

    /**
     * The same transforms, keeping at most {@code bytes} of decoded images per JVM; 0 decodes every
     * sample's image (the same bytes, at the decode's cost every epoch).
     */
    public ImageTransforms withMemoBound(long bytes) {
        return new ImageTransforms(config, decoded.withBound(bytes));
    }

    public ImageConfig config() {
        return config;
    }

    /** The memo of decoded images. */
    public FileMemo<ImagePreparation.Decoded> decoded() {
        return decoded;
    }

    @Override
    public Steps<EncodedImage> start(SampleKey key) {
        return new ImagePreparation(key, config, decoded);
    }

    @Override
    public Steps<EncodedImage> read(DataInput in) throws IOException {
        return ImagePreparation.readFrom(in, config, decoded);
    }

    @Override
    public MemoStats memo() {
        return decoded.stats();
    }

    /**
     * torchvision's evaluation transforms: the shorter side resized to {@code size * 256 / 224},
     * the centre {@code size} x {@code size} square, normalised; done in one bilinear pass over the
     * window of the image that square covers. Fresh arrays, the image's class as target.
     */
    public static Patch evaluation(EncodedImage image, ImageConfig config)
            throws BadInputException {
        BufferedImage decoded = ImageDecoding.decodeImage(image);
        int w = decoded.getWidth();
        int h = decoded.getHeight();
        int[] rgb = ImageDecoding.pixels(decoded);
        int s = config.size();
        double resizedShort = Math.floor(s * 256.0 / 224);
        double f = Math.min(w, h) / resizedShort; // source pixels per resized pixel
        int cw = (int) Math.max(1, Math.min(w, Math.round(s * f)));
        int ch = (int) Math.max(1, Math.min(h, Math.round(s * f)));
        float[] values = new float[3 * s * s];
        ImagePreparation.resize(rgb, w, (h - ch) / 2, (w - cw) / 2, ch, cw, values, s, 0, s);
        ImagePreparation.normalize(values, config);
        return Patch.ofClass(new Shape3(3, s, s), values, image.file().label());
    }
}
