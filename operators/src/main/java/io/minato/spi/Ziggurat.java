package io.minato.spi;

/**
 * Standard normal draws by Marsaglia and Tsang's ziggurat ("The Ziggurat Method for Generating
 * Random Variables", J. Stat. Software 5(8), 2000), with 256 layers. About 99 % of draws take one
 * 64-bit value, a comparison and a multiplication; the polar method takes a logarithm and a square
 * root for every pair, and was 38 % of a sample's preparation CPU in the noise transform.
 *
 * <p>Each draw takes its layer from the value's low 8 bits and its abscissa from the other 56, so
 * the two are independent (the 2000 paper's 32-bit version reused bits for both, a known flaw). The
 * tables are built with {@link StrictMath} and the rare slow paths use it too, so a draw is the
 * same on every JVM: a sample prepared again elsewhere is the same bytes.
 */
final class Ziggurat {
    private static final int LAYERS = 256;

    /** Where the base layer's tail starts, and the area of each layer (for 256 layers). */
    private static final double R = 3.6541528853610088;

    private static final double V = 0.00492867323399;
    private static final double M = 0x1.0p55; // the abscissa's range: 56-bit signed values

    private static final long[] K = new long[LAYERS];
    private static final double[] W = new double[LAYERS];
    private static final double[] F = new double[LAYERS];

    static {
        double dn = R;
        double tn = dn;
        double q = V / StrictMath.exp(-0.5 * dn * dn);
        K[0] = (long) ((dn / q) * M);
        K[1] = 0;
        W[0] = q / M;
        W[LAYERS - 1] = dn / M;
        F[0] = 1.0;
        F[LAYERS - 1] = StrictMath.exp(-0.5 * dn * dn);
        for (int i = LAYERS - 2; i >= 1; i--) {
            dn = StrictMath.sqrt(-2 * StrictMath.log(V / dn + StrictMath.exp(-0.5 * dn * dn)));
            K[i + 1] = (long) ((dn / tn) * M);
            tn = dn;
            F[i] = StrictMath.exp(-0.5 * dn * dn);
            W[i] = dn / M;
        }
    }

    private Ziggurat() {}

    /** A standard normal value from {@code random}'s stream. */
    static double next(SampleRandom random) {
        long bits = random.nextLong();
        int layer = (int) bits & (LAYERS - 1);
        long x = bits >> 8;
        if (Math.abs(x) < K[layer]) {
            return x * W[layer];
        }
        return slow(random, layer, x);
    }

    /** Outside a layer's rectangle: the base layer's tail, or a wedge's rejection test. */
    private static double slow(SampleRandom random, int layer, long x) {
        while (true) {
            double u = x * W[layer];
            if (layer == 0) {
                double t;
                double y;
                do {
                    t = -StrictMath.log(open(random)) / R;
                    y = -StrictMath.log(open(random));
                } while (y + y < t * t);
                return x > 0 ? R + t : -R - t;
            }
            if (F[layer] + random.nextDouble() * (F[layer - 1] - F[layer])
                    < StrictMath.exp(-0.5 * u * u)) {
                return u;
            }
            long bits = random.nextLong();
            layer = (int) bits & (LAYERS - 1);
            x = bits >> 8;
            if (Math.abs(x) < K[layer]) {
                return x * W[layer];
            }
        }
    }

    /** Uniform in (0, 1): never 0, whose logarithm has no value. */
    private static double open(SampleRandom random) {
        return ((random.nextLong() >>> 11) + 0.5) * 0x1.0p-53;
    }
}
