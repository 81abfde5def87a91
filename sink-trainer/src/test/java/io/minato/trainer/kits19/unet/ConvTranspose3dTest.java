package io.minato.trainer.kits19.unet;

import static io.minato.trainer.kits19.unet.TestArrays.assertClose;
import static io.minato.trainer.kits19.unet.TestArrays.param;
import static io.minato.trainer.kits19.unet.TestArrays.scaledRandom;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.NormalInitializer;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ConvTranspose3dTest {

    private static final int N = 2;
    private static final int CIN = 3;
    private static final int COUT = 2;
    private static final int D = 3;
    private static final int H = 4;
    private static final int W = 5;
    private static final Shape IN = new Shape(N, CIN, D, H, W);
    private static final Shape OUT = new Shape(N, COUT, 2 * D, 2 * H, 2 * W);

    @Test
    void shouldUpSampleLikeTheScatterDefinitionOfATransposedConvolution() {
        Random random = new Random(11);
        float[] x = scaledRandom(random, (int) IN.size());
        try (NDManager manager = NDManager.newBaseManager()) {
            ConvTranspose3d up = initialisedConv(manager);
            float[] weight = param(up, "weight").getArray().toFloatArray();
            float[] bias = param(up, "bias").getArray().toFloatArray();
            NDArray y = forward(manager, up, manager.create(x, IN));
            assertThat(y.getShape()).isEqualTo(OUT);
            assertThat(up.getOutputShapes(new Shape[] {IN})).containsExactly(OUT);
            assertClose(y.toFloatArray(), reference(x, weight, bias), 1e-4);
        }
    }

    @Test
    void shouldPassGradientsToInputBiasAndWeightsMatchingFiniteDifferences() {
        Random random = new Random(12);
        float[] x = scaledRandom(random, (int) IN.size());
        float[] r = scaledRandom(random, (int) OUT.size());
        try (NDManager manager = NDManager.newBaseManager()) {
            ConvTranspose3d up = initialisedConv(manager);
            NDArray input = manager.create(x, IN);
            input.setRequiresGradient(true);
            NDArray rArray = manager.create(r, OUT);
            try (GradientCollector gc = Engine.getInstance().newGradientCollector()) {
                gc.backward(forward(manager, up, input).mul(rArray).sum());
            }
            NDArray weight = param(up, "weight").getArray();
            float[] analytic = weight.getGradient().toFloatArray();
            assertThat(input.getGradient().abs().sum().getFloat()).isPositive();
            // d/d bias[co] of sum(r * y) is the sum of r over that output channel.
            float[] dbias = param(up, "bias").getArray().getGradient().toFloatArray();
            for (int co = 0; co < COUT; co++) {
                double expected = 0;
                for (int n = 0; n < N; n++) {
                    int base = (n * COUT + co) * 8 * D * H * W;
                    for (int v = 0; v < 8 * D * H * W; v++) {
                        expected += r[base + v];
                    }
                }
                assertThat((double) dbias[co]).isCloseTo(expected, within(1e-3));
            }

            // Central differences through the block itself, one weight at a time; the loss is
            // linear in each weight, so a large step costs no accuracy and beats float rounding.
            float[] w0 = weight.toFloatArray();
            float h = 0.25f;
            for (int i = 0; i < w0.length; i++) {
                double plus = perturbedLoss(manager, up, weight, w0, i, h, input, r);
                double minus = perturbedLoss(manager, up, weight, w0, i, -h, input, r);
                double numeric = (plus - minus) / (2 * h);
                assertThat((double) analytic[i])
                        .as("d loss / d weight[%d]", i)
                        .isCloseTo(numeric, within(1e-3 + 1e-3 * Math.abs(numeric)));
            }
            weight.set(w0);
        }
    }

    @Test
    void shouldRefuseAnInputThatIsNotAVolume() {
        ConvTranspose3d up = ConvTranspose3d.builder().setFilters(2).build();
        assertThatThrownBy(() -> up.getOutputShapes(new Shape[] {new Shape(2, 3, 4, 4)}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("(N, C, D, H, W)");
        assertThatThrownBy(() -> ConvTranspose3d.builder().build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("setFilters");
    }

    private static ConvTranspose3d initialisedConv(NDManager manager) {
        ConvTranspose3d up = ConvTranspose3d.builder().setFilters(COUT).build();
        up.setInitializer(new NormalInitializer(1f), Parameter.Type.WEIGHT);
        // A non-zero bias, so that adding it is tested too.
        up.setInitializer(new NormalInitializer(1f), Parameter.Type.BIAS);
        up.initialize(manager, DataType.FLOAT32, IN);
        return up;
    }

    private static NDArray forward(NDManager manager, ConvTranspose3d up, NDArray input) {
        return up.forward(new ParameterStore(manager, false), new NDList(input), true)
                .singletonOrThrow();
    }

    private static double perturbedLoss(
            NDManager manager,
            ConvTranspose3d up,
            NDArray weight,
            float[] w0,
            int index,
            float h,
            NDArray input,
            float[] r) {
        float[] w = w0.clone();
        w[index] += h;
        weight.set(w);
        try (NDManager scope = manager.newSubManager()) {
            NDArray x = input.stopGradient();
            x.attach(scope);
            float[] y = forward(scope, up, x).toFloatArray();
            double loss = 0;
            for (int i = 0; i < y.length; i++) {
                loss += (double) y[i] * r[i];
            }
            return loss;
        }
    }

    /** out[n, co, 2d+a, 2h+b, 2w+c] += x[n, ci, d, h, w] * weight[ci, co, a, b, c], then + bias. */
    private static float[] reference(float[] x, float[] weight, float[] bias) {
        int od = 2 * D;
        int oh = 2 * H;
        int ow = 2 * W;
        double[] out = new double[N * COUT * od * oh * ow];
        for (int n = 0; n < N; n++) {
            for (int co = 0; co < COUT; co++) {
                for (int v = 0; v < od * oh * ow; v++) {
                    out[(n * COUT + co) * od * oh * ow + v] = bias[co];
                }
            }
        }
        for (int n = 0; n < N; n++) {
            for (int ci = 0; ci < CIN; ci++) {
                for (int d = 0; d < D; d++) {
                    for (int h = 0; h < H; h++) {
                        for (int w = 0; w < W; w++) {
                            float xv = x[(((n * CIN + ci) * D + d) * H + h) * W + w];
                            for (int co = 0; co < COUT; co++) {
                                for (int a = 0; a < 2; a++) {
                                    for (int b = 0; b < 2; b++) {
                                        for (int c = 0; c < 2; c++) {
                                            float wv =
                                                    weight[
                                                            (((ci * COUT + co) * 2 + a) * 2 + b) * 2
                                                                    + c];
                                            int o =
                                                    (((n * COUT + co) * od + 2 * d + a) * oh
                                                                            + 2 * h
                                                                            + b)
                                                                    * ow
                                                            + 2 * w
                                                            + c;
                                            out[o] += xv * wv;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        float[] f = new float[out.length];
        for (int i = 0; i < f.length; i++) {
            f[i] = (float) out[i];
        }
        return f;
    }
}
