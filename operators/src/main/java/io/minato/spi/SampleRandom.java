package io.minato.spi;

/**
 * A small SplitMix64 generator whose output is fixed by its seed alone, on every JVM.
 *
 * <p>Every random choice of a sample's preparation comes from a stream keyed by (run seed, epoch,
 * sample index, transform, part). Streams are independent, so a preparation resumed on another
 * thread or operator re-creates the stream it needs instead of carrying generator state.
 */
public final class SampleRandom {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private long state;
    private double spareGaussian = Double.NaN;

    private SampleRandom(long seed) {
        this.state = seed;
    }

    /** The stream of one transform (and one part of it) of one sample. */
    public static SampleRandom of(SampleKey key, Stream stream, int part) {
        long h = mix(key.seed() ^ 0x6A09E667F3BCC909L);
        h = mix(h ^ key.epoch());
        h = mix(h ^ key.index());
        h = mix(h ^ (((long) stream.ordinal() << 32) | (part & 0xFFFFFFFFL)));
        return new SampleRandom(h);
    }

    /** Independent random streams of a preparation. */
    public enum Stream {
        CROP_BRANCH,
        CROP_PICK,
        FLIP,
        BRIGHTNESS,
        NOISE_DECISION,
        NOISE_VALUES,
        EPOCH_ORDER,
        /** Whether the sample is one of the heavy tail (the bench's --tail knob). */
        TAIL_DECISION,
        TAIL_VALUES,
        // The images workload's; new streams go last: the ordinal is part of every stream's seed.
        /** RandomResizedCrop's window. */
        IMAGE_CROP,
        /** RandomHorizontalFlip. */
        IMAGE_FLIP,
        /** ColorJitter's order and factors. */
        IMAGE_JITTER
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    public long nextLong() {
        state += GOLDEN;
        return mix(state);
    }

    /** Uniform in [0, 1), 53 random bits. */
    public double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    /** Uniform in [low, high). */
    public double nextDouble(double low, double high) {
        return low + (high - low) * nextDouble();
    }

    /** Uniform in [0, bound), without modulo bias; Python's {@code randrange(bound)}. */
    public int nextInt(int bound) {
        if (bound <= 0) {
            throw new IllegalArgumentException("bound must be positive: " + bound);
        }
        // Java's own rejection scheme on 63-bit values: accept unless u falls in the last,
        // incomplete block of size bound.
        long u = nextLong() >>> 1;
        long r;
        while (u - (r = u % bound) + (bound - 1) < 0) {
            u = nextLong() >>> 1;
        }
        return (int) r;
    }

    /** Standard normal, by the ziggurat method ({@link Ziggurat}). */
    public double nextGaussian() {
        return Ziggurat.next(this);
    }

    /**
     * Standard normal by the Marsaglia polar method (pairs, the second kept for the next call): a
     * logarithm and a square root a pair. The tail knob's synthetic work draws these, so that a
     * heavy sample costs what it cost when the noise drew them too.
     */
    public double nextGaussianPolar() {
        if (!Double.isNaN(spareGaussian)) {
            double g = spareGaussian;
            spareGaussian = Double.NaN;
            return g;
        }
        double u;
        double v;
        double s;
        do {
            u = 2 * nextDouble() - 1;
            v = 2 * nextDouble() - 1;
            s = u * u + v * v;
        } while (s >= 1 || s == 0);
        double m = Math.sqrt(-2 * Math.log(s) / s);
        spareGaussian = v * m;
        return u * m;
    }
}
