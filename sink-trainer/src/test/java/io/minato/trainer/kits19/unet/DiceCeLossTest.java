package io.minato.trainer.kits19.unet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DiceCeLossTest {

    private static final int N = 2;
    private static final int C = 3;
    private static final int V = 3 * 4 * 5;
    private static final Shape LOGITS = new Shape(N, C, 3, 4, 5);
    private static final Shape LABELS = new Shape(N, 1, 3, 4, 5);

    @Test
    void shouldMatchADirectLoopOverRandomLogits() {
        Random random = new Random(5);
        float[] logits = TestArrays.scaledRandom(random, N * C * V);
        int[] labels = randomLabels(random);
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray x = manager.create(logits, LOGITS);
            x.setRequiresGradient(true);
            for (boolean background : new boolean[] {false, true}) {
                DiceCeLoss loss = DiceCeLoss.builder().optIncludeBackground(background).build();
                try (GradientCollector gc = Engine.getInstance().newGradientCollector()) {
                    NDArray value =
                            loss.evaluate(
                                    new NDList(manager.create(labels, LABELS)), new NDList(x));
                    assertThat((double) value.getFloat())
                            .as("include background %s", background)
                            .isCloseTo(reference(logits, labels, background), within(1e-5));
                    gc.backward(value);
                }
                assertThat(x.getGradient().abs().sum().getFloat()).isPositive();
            }
        }
    }

    @Test
    void shouldBeAboutHalfOfOnePlusLn3ForAUniformPredictionAndNearZeroForAPerfectOne() {
        int[] labels = randomLabels(new Random(6));
        try (NDManager manager = NDManager.newBaseManager()) {
            DiceCeLoss loss = DiceCeLoss.builder().build();
            NDList truth = new NDList(manager.create(labels, LABELS));
            float uniform = loss.evaluate(truth, new NDList(manager.zeros(LOGITS))).getFloat();
            // Cross-entropy ln 3; Dice of a 1/3 everywhere prediction is small but not 0.
            assertThat((double) uniform)
                    .isCloseTo(reference(new float[N * C * V], labels, false), within(1e-5))
                    .isBetween(0.8, (1 + Math.log(3)) / 2);

            float[] perfect = new float[N * C * V];
            for (int n = 0; n < N; n++) {
                for (int v = 0; v < V; v++) {
                    perfect[(n * C + labels[n * V + v]) * V + v] = 30f;
                }
            }
            assertThat(loss.evaluate(truth, new NDList(manager.create(perfect, LOGITS))).getFloat())
                    .isLessThan(1e-4f);
        }
    }

    @Test
    void shouldScoreDicePerForegroundClassAveragedOverTheBatch() {
        // Sample 0: kidney predicted on 2 of its 3 voxels plus 1 false voxel, tumour exact.
        // Sample 1: no tumour in truth or prediction (scores 1, as the reference); kidney missed.
        int[] truth = {1, 1, 1, 0, 2, 2, 0, 0, /* */ 1, 1, 0, 0, 0, 0, 0, 0};
        int[] pred = {1, 1, 0, 1, 2, 2, 0, 0, /* */ 0, 0, 0, 0, 0, 0, 0, 0};
        try (NDManager manager = NDManager.newBaseManager()) {
            Shape shape = new Shape(2, 1, 2, 2, 2);
            float[] dice =
                    DiceCeLoss.dice(
                            manager.create(pred, shape).toType(DataType.UINT8, false),
                            manager.create(truth, shape).toType(DataType.UINT8, false));
            assertThat(dice).hasSize(2);
            assertThat((double) dice[0]).isCloseTo((2.0 * 2 / (3 + 3) + 0) / 2, within(1e-5));
            assertThat((double) dice[1]).isCloseTo(1.0, within(1e-5));
        }
    }

    @Test
    void shouldRefuseLabelsThatDoNotMatchTheLogits() {
        try (NDManager manager = NDManager.newBaseManager()) {
            assertThatThrownBy(
                            () ->
                                    DiceCeLoss.builder()
                                            .build()
                                            .evaluate(
                                                    new NDList(
                                                            manager.zeros(
                                                                    new Shape(2, 1, 3, 4, 4))),
                                                    new NDList(manager.zeros(LOGITS))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("labels");
        }
    }

    private static int[] randomLabels(Random random) {
        int[] labels = new int[N * V];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i % V < C ? i % V : random.nextInt(C); // every class present in each sample
        }
        return labels;
    }

    /** The reference loss in double: softmax, one-hot, Dice per (sample, class), cross-entropy. */
    private static double reference(float[] logits, int[] labels, boolean background) {
        double crossEntropy = 0;
        double[][] inter = new double[N][C];
        double[][] predSum = new double[N][C];
        double[][] trueSum = new double[N][C];
        for (int n = 0; n < N; n++) {
            for (int v = 0; v < V; v++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int c = 0; c < C; c++) {
                    max = Math.max(max, logits[(n * C + c) * V + v]);
                }
                double z = 0;
                for (int c = 0; c < C; c++) {
                    z += Math.exp(logits[(n * C + c) * V + v] - max);
                }
                int label = labels[n * V + v];
                for (int c = 0; c < C; c++) {
                    double p = Math.exp(logits[(n * C + c) * V + v] - max) / z;
                    double t = c == label ? 1 : 0;
                    inter[n][c] += p * t;
                    predSum[n][c] += p;
                    trueSum[n][c] += t;
                }
                crossEntropy -= logits[(n * C + label) * V + v] - max - Math.log(z);
            }
        }
        crossEntropy /= N * V;
        double diceLoss = 0;
        int first = background ? 0 : 1;
        for (int n = 0; n < N; n++) {
            for (int c = first; c < C; c++) {
                diceLoss += 1 - (2 * inter[n][c] + 1e-6) / (predSum[n][c] + trueSum[n][c] + 1e-6);
            }
        }
        diceLoss /= N * (C - first);
        return (diceLoss + crossEntropy) / 2;
    }
}
