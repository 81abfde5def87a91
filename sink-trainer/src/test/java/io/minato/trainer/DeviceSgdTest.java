package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The on-device update against the host loop it replaced, on CPU arrays. */
class DeviceSgdTest {

    @ParameterizedTest(name = "weight decay {0}, nesterov {1}")
    @CsvSource({"0, false", "0.01, false", "0, true", "0.0005, true"})
    void shouldMatchTheHostUpdateStepAfterStep(float weightDecay, boolean nesterov) {
        float momentum = 0.9f;
        SplittableRandom random = new SplittableRandom(7);
        int[] sizes = {27, 1, 300};
        float[][] w = new float[sizes.length][];
        float[][] v = new float[sizes.length][];
        for (int i = 0; i < sizes.length; i++) {
            w[i] = gaussian(random, sizes[i]);
            v[i] = new float[sizes[i]];
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            DeviceSgd sgd = new DeviceSgd(manager, momentum, weightDecay, nesterov);
            NDArray[] weights = new NDArray[sizes.length];
            NDArray[] velocity = new NDArray[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                weights[i] = manager.create(w[i].clone(), new Shape(sizes[i]));
                velocity[i] = manager.zeros(new Shape(sizes[i]));
            }
            for (int step = 1; step <= 5; step++) {
                float lr = 0.1f * step;
                float[][] g = new float[sizes.length][];
                for (int i = 0; i < sizes.length; i++) {
                    g[i] = gaussian(random, sizes[i]);
                }
                try (NDManager scope = manager.newSubManager()) {
                    NDArray[] gradients = new NDArray[sizes.length];
                    for (int i = 0; i < sizes.length; i++) {
                        gradients[i] = scope.create(g[i]);
                    }
                    sgd.apply(weights, gradients, velocity, lr, scope);
                }
                hostUpdate(w, v, g, lr, momentum, weightDecay, nesterov);
                for (int i = 0; i < sizes.length; i++) {
                    float[] onDevice = weights[i].toFloatArray();
                    float[] momentumOnDevice = velocity[i].toFloatArray();
                    for (int j = 0; j < sizes[i]; j++) {
                        assertThat(onDevice[j]).isCloseTo(w[i][j], within(1e-6f));
                        assertThat(momentumOnDevice[j]).isCloseTo(v[i][j], within(1e-6f));
                    }
                }
            }
            // The step moved the weights: a no-op update would have failed above, but say so.
            assertThat(weights[0].toFloatArray())
                    .isNotEqualTo(gaussian(new SplittableRandom(7), 27));
        }
    }

    /**
     * A mixed-precision step whose gradient overflowed is skipped on the device: whatever the
     * gradient holds (infinities, NaN), the weights and the momentum stay as they were, bit for
     * bit; where nothing overflowed the masked update is the plain one, bit for bit.
     */
    @ParameterizedTest(name = "weight decay {0}, nesterov {1}")
    @CsvSource({"0, false", "0.01, false", "0, true", "0.0005, true"})
    void shouldSkipTheUpdateWhereTheGradientOverflowedAndOnlyThere(
            float weightDecay, boolean nesterov) {
        SplittableRandom random = new SplittableRandom(5);
        float[] w = gaussian(random, 40);
        float[] v = gaussian(random, 40);
        float[] g = gaussian(random, 40);
        float[] bad = g.clone();
        bad[3] = Float.POSITIVE_INFINITY;
        bad[7] = Float.NaN;
        try (NDManager manager = NDManager.newBaseManager()) {
            DeviceSgd sgd = new DeviceSgd(manager, 0.9f, weightDecay, nesterov);
            NDArray no = manager.create(false);
            NDArray yes = manager.create(true);

            NDArray[] masked = {manager.create(w.clone())};
            NDArray[] maskedV = {manager.create(v.clone())};
            NDArray[] plain = {manager.create(w.clone())};
            NDArray[] plainV = {manager.create(v.clone())};
            try (NDManager scope = manager.newSubManager()) {
                sgd.apply(masked, new NDArray[] {scope.create(g)}, maskedV, 0.1f, no, scope);
                sgd.apply(plain, new NDArray[] {scope.create(g)}, plainV, 0.1f, scope);
            }
            assertThat(masked[0].toFloatArray()).isEqualTo(plain[0].toFloatArray());
            assertThat(maskedV[0].toFloatArray()).isEqualTo(plainV[0].toFloatArray());
            assertThat(plain[0].toFloatArray()).isNotEqualTo(w);

            NDArray[] skipped = {manager.create(w.clone())};
            NDArray[] skippedV = {manager.create(v.clone())};
            try (NDManager scope = manager.newSubManager()) {
                sgd.apply(skipped, new NDArray[] {scope.create(bad)}, skippedV, 0.1f, yes, scope);
            }
            assertThat(skipped[0].toFloatArray()).isEqualTo(w);
            assertThat(skippedV[0].toFloatArray()).isEqualTo(v);
        }
    }

    /** The host loop the trainer ran before the update moved to the device (PyTorch's rule). */
    private static void hostUpdate(
            float[][] weights,
            float[][] velocity,
            float[][] gradient,
            float lr,
            float m,
            float wd,
            boolean nesterov) {
        for (int i = 0; i < weights.length; i++) {
            float[] w = weights[i];
            float[] v = velocity[i];
            for (int j = 0; j < w.length; j++) {
                float g = gradient[i][j] + wd * w[j];
                v[j] = m * v[j] + g;
                w[j] -= lr * (nesterov ? g + m * v[j] : v[j]);
            }
        }
    }

    private static float[] gaussian(SplittableRandom random, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) (random.nextDouble() * 2 - 1);
        }
        return values;
    }
}
