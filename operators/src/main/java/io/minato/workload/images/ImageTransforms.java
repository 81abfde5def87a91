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
     * torchvision's evaluation transforms: the shorter side resized to {@code size * 256 / 224}
     * (the longer in proportion, truncated, as torchvision's Resize), the centre {@code size} x
     * {@code size} square, normalised; the resize antialiased as PIL's, computed for that square
     * only. Fresh arrays, the image's class as target.
     */
    public static Patch evaluation(EncodedImage image, ImageConfig config)
            throws BadInputException {
        BufferedImage decoded = ImageDecoding.decodeImage(image);
        int w = decoded.getWidth();
        int h = decoded.getHeight();
        int[] rgb = ImageDecoding.pixels(decoded);
        int s = config.size();
        int resizedShort = (int) Math.floor(s * 256.0 / 224);
        int resizedW = w <= h ? resizedShort : (int) ((long) resizedShort * w / h);
        int resizedH = w <= h ? (int) ((long) resizedShort * h / w) : resizedShort;
        // CenterCrop's offsets: Python's round, half to even.
        int left = (int) Math.rint((resizedW - s) / 2.0);
        int top = (int) Math.rint((resizedH - s) / 2.0);
        float[] values = new float[3 * s * s];
        ImagePreparation.resize(
                rgb,
                w,
                new ImagePreparation.Axis(0, w, resizedW, left, s),
                new ImagePreparation.Axis(0, h, resizedH, top, s),
                values,
                0,
                s);
        ImagePreparation.normalize(values, config);
        return Patch.ofClass(new Shape3(3, s, s), values, image.file().label());
    }
}
