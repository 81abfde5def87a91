package io.minato.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class SampleRandomTest {

    @Test
    void shouldRepeatAStreamForTheSameKeyAndDifferAcrossStreamsAndParts() {
        SampleKey key = new SampleKey(1, 2, 3);
        SampleRandom a = SampleRandom.of(key, SampleRandom.Stream.FLIP, 0);
        SampleRandom b = SampleRandom.of(key, SampleRandom.Stream.FLIP, 0);
        long first = a.nextLong();
        assertThat(b.nextLong()).isEqualTo(first);
        assertThat(SampleRandom.of(key, SampleRandom.Stream.FLIP, 1).nextLong())
                .isNotEqualTo(first);
        assertThat(SampleRandom.of(key, SampleRandom.Stream.NOISE_VALUES, 0).nextLong())
                .isNotEqualTo(first);
        assertThat(SampleRandom.of(new SampleKey(1, 3, 2), SampleRandom.Stream.FLIP, 0).nextLong())
                .isNotEqualTo(first);
    }

    @Test
    void shouldDrawIntegersUniformlyBelowTheBound() {
        SampleRandom r = SampleRandom.of(new SampleKey(5, 0, 0), SampleRandom.Stream.CROP_PICK, 0);
        int[] counts = new int[7];
        for (int i = 0; i < 70_000; i++) {
            counts[r.nextInt(7)]++;
        }
        for (int c : counts) {
            assertThat(c).isBetween(9_500, 10_500);
        }
    }

    /**
     * The ziggurat's draws against the standard normal: moments, the Kolmogorov-Smirnov distance to
     * its CDF over a million draws, and the share beyond 2, 3 and 4 sigma (the base layer's tail
     * starts at 3.65), each within a few standard errors.
     */
    @Test
    void shouldDrawTheStandardNormalDistributionByTheZiggurat() {
        SampleRandom r =
                SampleRandom.of(new SampleKey(9, 2, 17), SampleRandom.Stream.NOISE_VALUES, 3);
        int n = 1_000_000;
        double[] g = new double[n];
        double sum = 0;
        double sq = 0;
        double fourth = 0;
        double[] beyond = new double[3];
        for (int i = 0; i < n; i++) {
            g[i] = r.nextGaussian();
            sum += g[i];
            sq += g[i] * g[i];
            fourth += g[i] * g[i] * g[i] * g[i];
            for (int k = 0; k < 3; k++) {
                if (Math.abs(g[i]) > k + 2) {
                    beyond[k]++;
                }
            }
        }
        assertThat(sum / n).isCloseTo(0, within(0.005)); // 5 standard errors
        assertThat(sq / n).isCloseTo(1, within(0.007));
        assertThat(fourth / n).isCloseTo(3, within(0.05));
        double[] expected = {0.0455003, 0.0026998, 0.0000633};
        for (int k = 0; k < 3; k++) {
            double se = Math.sqrt(expected[k] * (1 - expected[k]) / n);
            assertThat(beyond[k] / n)
                    .as("beyond %d sigma", k + 2)
                    .isCloseTo(expected[k], within(5 * se));
        }
        java.util.Arrays.sort(g);
        double d = 0;
        for (int i = 0; i < n; i++) {
            double cdf = normalCdf(g[i]);
            d =
                    Math.max(
                            d,
                            Math.max(
                                    Math.abs(cdf - (double) i / n), Math.abs((i + 1.0) / n - cdf)));
        }
        assertThat(d).as("Kolmogorov-Smirnov distance").isLessThan(1.63 / Math.sqrt(n)); // p 0.01
    }

    /** The same stream gives the same draws: a sample prepared again is the same bytes. */
    @Test
    void shouldRepeatTheSameDrawsFromTheSameStream() {
        SampleKey key = new SampleKey(4, 1, 9);
        SampleRandom a = SampleRandom.of(key, SampleRandom.Stream.NOISE_VALUES, 5);
        SampleRandom b = SampleRandom.of(key, SampleRandom.Stream.NOISE_VALUES, 5);
        SampleRandom other = SampleRandom.of(key, SampleRandom.Stream.NOISE_VALUES, 6);
        boolean differs = false;
        for (int i = 0; i < 10_000; i++) {
            double x = a.nextGaussian();
            assertThat(b.nextGaussian()).isEqualTo(x);
            differs |= other.nextGaussian() != x;
        }
        assertThat(differs).isTrue();
    }

    /** Abramowitz and Stegun 7.1.26 through erf: the CDF to about 1e-7. */
    private static double normalCdf(double x) {
        double z = Math.abs(x) / Math.sqrt(2);
        double t = 1 / (1 + 0.3275911 * z);
        double erf =
                1
                        - t
                                * (0.254829592
                                        + t
                                                * (-0.284496736
                                                        + t
                                                                * (1.421413741
                                                                        + t
                                                                                * (-1.453152027
                                                                                        + t
                                                                                                * 1.061405429))))
                                * Math.exp(-z * z);
        return x >= 0 ? 0.5 * (1 + erf) : 0.5 * (1 - erf);
    }

    /** The polar method, which the tail knob's synthetic work still draws. */
    @Test
    void shouldDrawStandardNormals() {
        SampleRandom r =
                SampleRandom.of(new SampleKey(5, 0, 1), SampleRandom.Stream.NOISE_VALUES, 0);
        double sum = 0;
        double sq = 0;
        int n = 200_000;
        for (int i = 0; i < n; i++) {
            double g = r.nextGaussianPolar();
            sum += g;
            sq += g * g;
        }
        assertThat(sum / n).isCloseTo(0, within(0.01));
        assertThat(sq / n).isCloseTo(1, within(0.02));
    }
}
