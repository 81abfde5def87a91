package io.minato.workload.images;

import java.io.Serializable;

/**
 * The image classification transforms' parameters, with torchvision's ImageNet training recipe as
 * the defaults ({@link #torchvision}): RandomResizedCrop(size, scale, ratio), RandomHorizontalFlip,
 * ColorJitter(brightness, contrast, saturation) and Normalize(mean, std); plus how many output
 * pixels a resumable resize step writes.
 */
public record ImageConfig(
        int size,
        double scaleMin,
        double scaleMax,
        double ratioMin,
        double ratioMax,
        double flipProbability,
        double brightness,
        double contrast,
        double saturation,
        double meanR,
        double meanG,
        double meanB,
        double stdR,
        double stdG,
        double stdB,
        long pixelsPerStep)
        implements Serializable {

    /** A few milliseconds of resizing per step (about 32,768 output pixels, 3 channels). */
    public static final long DEFAULT_PIXELS_PER_STEP = 1L << 15;

    public ImageConfig {
        if (size < 1) {
            throw new IllegalArgumentException("size must be >= 1: " + size);
        }
        if (!(scaleMin > 0 && scaleMin <= scaleMax && scaleMax <= 1)) {
            throw new IllegalArgumentException(
                    "scale must satisfy 0 < min <= max <= 1: " + scaleMin + ", " + scaleMax);
        }
        if (!(ratioMin > 0 && ratioMin <= ratioMax)) {
            throw new IllegalArgumentException(
                    "ratio must satisfy 0 < min <= max: " + ratioMin + ", " + ratioMax);
        }
        if (!(flipProbability >= 0 && flipProbability <= 1)) {
            throw new IllegalArgumentException(
                    "flip probability not in [0, 1]: " + flipProbability);
        }
        if (!(brightness >= 0 && contrast >= 0 && saturation >= 0)) {
            throw new IllegalArgumentException("colour jitter strengths must be >= 0");
        }
        if (!(stdR > 0 && stdG > 0 && stdB > 0)) {
            throw new IllegalArgumentException("normalisation std must be > 0");
        }
        if (pixelsPerStep < 1) {
            throw new IllegalArgumentException("pixelsPerStep must be >= 1: " + pixelsPerStep);
        }
    }

    /** torchvision's ImageNet training transforms with a square crop of {@code size}. */
    public static ImageConfig torchvision(int size) {
        return new ImageConfig(
                size,
                0.08,
                1.0,
                3.0 / 4,
                4.0 / 3,
                0.5,
                0.4,
                0.4,
                0.4,
                0.485,
                0.456,
                0.406,
                0.229,
                0.224,
                0.225,
                DEFAULT_PIXELS_PER_STEP);
    }

    public ImageConfig withPixelsPerStep(long pixels) {
        return new ImageConfig(
                size,
                scaleMin,
                scaleMax,
                ratioMin,
                ratioMax,
                flipProbability,
                brightness,
                contrast,
                saturation,
                meanR,
                meanG,
                meanB,
                stdR,
                stdG,
                stdB,
                pixels);
    }

    double mean(int channel) {
        return channel == 0 ? meanR : channel == 1 ? meanG : meanB;
    }

    double std(int channel) {
        return channel == 0 ? stdR : channel == 1 ? stdG : stdB;
    }
}
