package io.minato.trainer.kits19.unet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.Random;

/** Random inputs, parameter look-up and element-wise comparison for the layer tests. */
final class TestArrays {

    private TestArrays() {}

    static float[] scaledRandom(Random random, int size) {
        float[] a = new float[size];
        for (int i = 0; i < size; i++) {
            a[i] = (float) (random.nextGaussian() * 2 + 0.5);
        }
        return a;
    }

    static Parameter param(Block block, String name) {
        return block.getParameters().stream()
                .filter(p -> p.getValue().getName().equals(name))
                .findFirst()
                .orElseThrow()
                .getValue();
    }

    static void assertClose(float[] actual, float[] expected, double tolerance) {
        assertThat(actual).hasSameSizeAs(expected);
        for (int i = 0; i < actual.length; i++) {
            assertThat((double) actual[i])
                    .as("element %d", i)
                    .isCloseTo(expected[i], within(tolerance));
        }
    }
}
