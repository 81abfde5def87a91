package io.minato.trainer.kits19.unet;

import static io.minato.trainer.kits19.unet.TestArrays.assertClose;
import static io.minato.trainer.kits19.unet.TestArrays.param;
import static io.minato.trainer.kits19.unet.TestArrays.scaledRandom;
import static org.assertj.core.api.Assertions.assertThat;

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
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class InstanceNorm3dTest {

    private static final int N = 2;
    private static final int C = 3;
    private static final int D = 3;
    private static final int H = 4;
    private static final int W = 5;
    private static final int V = D * H * W;
    private static final Shape SHAPE = new Shape(N, C, D, H, W);

    @Test
    void shouldNormaliseEachSampleAndChannelLikeADirectLoop() {
        Random random = new Random(7);
        float[] x = scaledRandom(random, N * C * V);
        float[] r = scaledRandom(random, N * C * V);
        try (NDManager manager = NDManager.newBaseManager()) {
            InstanceNorm3d norm = initialisedNorm(manager);
            float[] gamma = param(norm, "gamma").getArray().toFloatArray();
            float[] beta = param(norm, "beta").getArray().toFloatArray();
            NDArray input = manager.create(x, SHAPE);
            input.setRequiresGradient(true);
            float[] out;
            try (GradientCollector gc = Engine.getInstance().newGradientCollector()) {
                NDArray y =
                        norm.forward(new ParameterStore(manager, false), new NDList(input), true)
                                .singletonOrThrow();
                assertThat(y.getShape()).isEqualTo(SHAPE);
                out = y.toFloatArray();
                gc.backward(y.mul(manager.create(r, SHAPE)).sum());
            }
            Reference ref = reference(x, r, gamma, beta, 1e-5);
            assertClose(out, ref.y, 1e-4);
            // Gradients against the closed form of d(sum r*y)/d(x, gamma, beta).
            assertClose(input.getGradient().toFloatArray(), ref.dx, 1e-3);
            assertClose(
                    param(norm, "gamma").getArray().getGradient().toFloatArray(), ref.dgamma, 1e-3);
            assertClose(
                    param(norm, "beta").getArray().getGradient().toFloatArray(), ref.dbeta, 1e-3);
        }
    }

    @Test
    void shouldStartAsThePlainNormalisationWithGammaOneAndBetaZero() {
        try (NDManager manager = NDManager.newBaseManager()) {
            InstanceNorm3d norm = InstanceNorm3d.builder().build();
            norm.initialize(manager, DataType.FLOAT32, SHAPE);
            float[] x = scaledRandom(new Random(3), N * C * V);
            float[] y =
                    norm.forward(
                                    new ParameterStore(manager, false),
                                    new NDList(manager.create(x, SHAPE)),
                                    false)
                            .singletonOrThrow()
                            .toFloatArray();
            float[] ones = new float[C];
            Arrays.fill(ones, 1f);
            assertClose(y, reference(x, new float[x.length], ones, new float[C], 1e-5).y, 1e-4);
        }
    }

    @Test
    void shouldGiveBetaAndNoInputGradientForAVolumeOfOneVoxel() {
        Shape one = new Shape(N, C, 1, 1, 1);
        Random random = new Random(5);
        float[] x = scaledRandom(random, N * C);
        float[] r = scaledRandom(random, N * C);
        try (NDManager manager = NDManager.newBaseManager()) {
            InstanceNorm3d norm = InstanceNorm3d.builder().build();
            norm.setInitializer(new NormalInitializer(1f), Parameter.Type.GAMMA);
            norm.setInitializer(new NormalInitializer(1f), Parameter.Type.BETA);
            norm.initialize(manager, DataType.FLOAT32, one);
            float[] beta = param(norm, "beta").getArray().toFloatArray();
            NDArray input = manager.create(x, one);
            input.setRequiresGradient(true);
            float[] out;
            try (GradientCollector gc = Engine.getInstance().newGradientCollector()) {
                NDArray y =
                        norm.forward(new ParameterStore(manager, false), new NDList(input), true)
                                .singletonOrThrow();
                assertThat(y.getShape()).isEqualTo(one);
                out = y.toFloatArray();
                // Autograd must not read memory that Java has freed since the forward pass.
                churnDirectMemory();
                gc.backward(y.mul(manager.create(r, one)).sum());
            }
            // Each value is its own mean: PyTorch's formula gives gamma * 0 + beta.
            float[] expected = new float[N * C];
            float[] dbeta = new float[C];
            for (int i = 0; i < N * C; i++) {
                expected[i] = beta[i % C];
                dbeta[i % C] += r[i];
            }
            assertClose(out, expected, 1e-6);
            assertClose(input.getGradient().toFloatArray(), new float[N * C], 1e-6);
            assertClose(
                    param(norm, "gamma").getArray().getGradient().toFloatArray(),
                    new float[C],
                    1e-6);
            assertClose(param(norm, "beta").getArray().getGradient().toFloatArray(), dbeta, 1e-5);
        }
    }

    /** Frees unreachable direct buffers and fills the memory they held with other bytes. */
    private static void churnDirectMemory() {
        List<ByteBuffer> held = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            System.gc();
            for (int i = 0; i < 20_000; i++) {
                ByteBuffer b = ByteBuffer.allocateDirect(4);
                b.putInt(0, 0x7f7f7f7f);
                held.add(b);
            }
        }
        assertThat(held).hasSize(60_000);
    }

    static InstanceNorm3d initialisedNorm(NDManager manager) {
        InstanceNorm3d norm = InstanceNorm3d.builder().build();
        // Non-trivial gamma and beta, so that the affine part is tested too.
        norm.setInitializer(new NormalInitializer(1f), Parameter.Type.GAMMA);
        norm.setInitializer(new NormalInitializer(1f), Parameter.Type.BETA);
        norm.initialize(manager, DataType.FLOAT32, SHAPE);
        return norm;
    }

    private record Reference(float[] y, float[] dx, float[] dgamma, float[] dbeta) {}

    /** Instance norm and its gradients for the loss sum(r * y), in double, one (n, c) at a time. */
    private static Reference reference(
            float[] x, float[] r, float[] gamma, float[] beta, double eps) {
        float[] y = new float[x.length];
        float[] dx = new float[x.length];
        double[] dgamma = new double[C];
        double[] dbeta = new double[C];
        for (int n = 0; n < N; n++) {
            for (int c = 0; c < C; c++) {
                int base = (n * C + c) * V;
                double mean = 0;
                for (int v = 0; v < V; v++) {
                    mean += x[base + v];
                }
                mean /= V;
                double var = 0;
                for (int v = 0; v < V; v++) {
                    var += (x[base + v] - mean) * (x[base + v] - mean);
                }
                var /= V;
                double sigma = Math.sqrt(var + eps);
                double meanR = 0;
                double meanRxhat = 0;
                for (int v = 0; v < V; v++) {
                    double xhat = (x[base + v] - mean) / sigma;
                    y[base + v] = (float) (gamma[c] * xhat + beta[c]);
                    dgamma[c] += r[base + v] * xhat;
                    dbeta[c] += r[base + v];
                    meanR += r[base + v];
                    meanRxhat += r[base + v] * xhat;
                }
                meanR /= V;
                meanRxhat /= V;
                for (int v = 0; v < V; v++) {
                    double xhat = (x[base + v] - mean) / sigma;
                    dx[base + v] =
                            (float) (gamma[c] / sigma * (r[base + v] - meanR - xhat * meanRxhat));
                }
            }
        }
        return new Reference(y, dx, toFloat(dgamma), toFloat(dbeta));
    }

    private static float[] toFloat(double[] a) {
        float[] f = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            f[i] = (float) a[i];
        }
        return f;
    }
}
