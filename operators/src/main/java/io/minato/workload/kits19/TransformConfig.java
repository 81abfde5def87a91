package io.minato.workload.kits19;

import io.minato.spi.Shape3;
import java.io.Serializable;

/**
 * The parameters of the MLPerf 3D-UNet training transforms, with the reference's defaults in one
 * place, plus how finely the heavy steps are split. Serializable: operators holding it ship in the
 * job graph.
 */
public record TransformConfig(
        Shape3 patch,
        double oversampling,
        double flipProbability,
        double brightnessFactor,
        double brightnessProbability,
        double noiseStd,
        double noiseProbability,
        long voxelsPerStep,
        double tailFraction,
        int tailFactor)
        implements Serializable {

    public static final int DEFAULT_PATCH = 128;
    public static final double DEFAULT_OVERSAMPLING = 0.4;
    public static final double DEFAULT_FLIP_PROBABILITY = 1.0 / 3;
    public static final double DEFAULT_BRIGHTNESS_FACTOR = 0.3;
    public static final double DEFAULT_BRIGHTNESS_PROBABILITY = 0.1;
    public static final double DEFAULT_NOISE_STD = 0.1;
    public static final double DEFAULT_NOISE_PROBABILITY = 0.1;

    /**
     * About 2^21 voxels per resumable step: a few milliseconds of work, so that a sample past its
     * deadline leaves its worker soon after.
     */
    public static final long DEFAULT_VOXELS_PER_STEP = 1L << 21;

    public TransformConfig {
        checkProbability("oversampling", oversampling);
        checkProbability("flipProbability", flipProbability);
        checkProbability("brightnessProbability", brightnessProbability);
        checkProbability("noiseProbability", noiseProbability);
        if (brightnessFactor < 0 || brightnessFactor >= 1) {
            throw new IllegalArgumentException(
                    "brightnessFactor must be in [0, 1): " + brightnessFactor);
        }
        if (noiseStd < 0) {
            throw new IllegalArgumentException("noiseStd must be >= 0: " + noiseStd);
        }
        checkProbability("tailFraction", tailFraction);
        if (tailFactor < 1) {
            throw new IllegalArgumentException("tailFactor must be >= 1: " + tailFactor);
        }
        if (voxelsPerStep < 1) {
            throw new IllegalArgumentException("voxelsPerStep must be >= 1: " + voxelsPerStep);
        }
    }

    /** The MLPerf reference settings with a cubic patch of the given edge. */
    public static TransformConfig mlperf(int patchEdge) {
        return new TransformConfig(
                Shape3.cube(patchEdge),
                DEFAULT_OVERSAMPLING,
                DEFAULT_FLIP_PROBABILITY,
                DEFAULT_BRIGHTNESS_FACTOR,
                DEFAULT_BRIGHTNESS_PROBABILITY,
                DEFAULT_NOISE_STD,
                DEFAULT_NOISE_PROBABILITY,
                DEFAULT_VOXELS_PER_STEP,
                0,
                1);
    }

    /**
     * A workload knob for benchmarks, not an MLPerf transform: a deterministic fraction {@code
     * fraction} of samples (drawn from each sample's own key) do {@code factor - 1} extra passes of
     * Gaussian-noise generation over their patch, about {@code factor} times a typical sample's CPU
     * at patch 128, with the result thrown away: the sample's bytes do not change. It gives the
     * generated data the heavy tail of the reference's foreground crop (hundreds of ms against a
     * few). {@code factor} 1 turns it off.
     */
    public TransformConfig withTail(double fraction, int factor) {
        return new TransformConfig(
                patch,
                oversampling,
                flipProbability,
                brightnessFactor,
                brightnessProbability,
                noiseStd,
                noiseProbability,
                voxelsPerStep,
                fraction,
                factor);
    }

    /** Whether the tail knob is on. */
    public boolean hasTail() {
        return tailFactor > 1 && tailFraction > 0;
    }

    public TransformConfig withVoxelsPerStep(long voxels) {
        return new TransformConfig(
                patch,
                oversampling,
                flipProbability,
                brightnessFactor,
                brightnessProbability,
                noiseStd,
                noiseProbability,
                voxels,
                tailFraction,
                tailFactor);
    }

    public TransformConfig withOversampling(double p) {
        return new TransformConfig(
                patch,
                p,
                flipProbability,
                brightnessFactor,
                brightnessProbability,
                noiseStd,
                noiseProbability,
                voxelsPerStep,
                tailFraction,
                tailFactor);
    }

    private static void checkProbability(String name, double p) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException(name + " must be in [0, 1]: " + p);
        }
    }
}
