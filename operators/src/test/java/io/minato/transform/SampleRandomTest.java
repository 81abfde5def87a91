package io.minato.transform;

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

    @Test
    void shouldDrawStandardNormals() {
        SampleRandom r =
                SampleRandom.of(new SampleKey(5, 0, 1), SampleRandom.Stream.NOISE_VALUES, 0);
        double sum = 0;
        double sq = 0;
        int n = 200_000;
        for (int i = 0; i < n; i++) {
            double g = r.nextGaussian();
            sum += g;
            sq += g * g;
        }
        assertThat(sum / n).isCloseTo(0, within(0.01));
        assertThat(sq / n).isCloseTo(1, within(0.02));
    }
}
