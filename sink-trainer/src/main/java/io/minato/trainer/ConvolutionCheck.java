package io.minato.trainer;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.convolutional.Conv3d;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Checks, once per JVM, that libtorch computes float convolutions and their gradients right on this
 * CPU, before a model trains or is evaluated there.
 *
 * <p>libtorch 2.5.1 and 2.7.1 (oneDNN 3.5 and 3.7) were seen computing them wrong on an AMD EPYC
 * with AVX-512: the input gradient of a 3-d convolution of 4 to 3 channels was off by 92 %, the
 * output of one of 40 to 40 channels by 31 %, some values NaN, whenever a convolution's channels
 * were not a multiple of the vector width (16 floats with AVX-512, 8 with AVX2). Training then went
 * wrong in ways that looked like nondeterminism: replicas that disagree, NaN losses after a
 * restore. oneDNN's AVX (and SSE4.1) kernels were right there, so the scripts start every JVM with
 * {@code ONEDNN_MAX_CPU_ISA=AVX} unless it is set (scripts/lib.sh). Each case here is computed in
 * float and in double (libtorch's own kernels, not oneDNN's) and compared.
 */
public final class ConvolutionCheck {
    /** The largest relative difference to double precision that passes. */
    static final double TOLERANCE = 1e-3;

    // Per number of spatial dimensions: "" where the cases passed, else the message.
    private static final Map<Integer, String> VERDICTS = new HashMap<>();

    private ConvolutionCheck() {}

    /** Wrong convolutions on this CPU: the same on every attempt, so no restart helps. */
    public static final class Wrong extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        public Wrong(String message) {
            super(message);
        }
    }

    /** One convolution with its batch, channels, side of the volume and kernel. */
    record Case(int dimensions, int batch, int in, int out, int side, int kernel) {
        String describe() {
            return dimensions + "-d convolution of " + in + " to " + out + " channels";
        }
    }

    /** How far float was from double for one quantity of one case. */
    record Finding(Case of, String quantity, double error) {}

    /** Channel counts that are not a multiple of 8 or 16, with a batch of 2, as the models have. */
    static final List<Case> CASES =
            List.of(
                    new Case(3, 2, 4, 3, 16, 3),
                    new Case(3, 2, 40, 40, 4, 3),
                    new Case(3, 2, 8, 8, 8, 3),
                    new Case(2, 2, 4, 3, 16, 3),
                    new Case(2, 2, 32, 10, 8, 3));

    /**
     * Throws unless libtorch's float convolutions of {@code dimensions} spatial dimensions (2 or 3)
     * agree with double precision on the CPU; checks once per JVM, with the threads this thread's
     * operators use.
     *
     * @throws Wrong naming the case, the error and what to do
     */
    public static void requireOnCpu(int dimensions) {
        String failure;
        synchronized (VERDICTS) {
            failure =
                    VERDICTS.computeIfAbsent(
                            dimensions,
                            d -> verdict(worst(d), System.getenv("ONEDNN_MAX_CPU_ISA")));
        }
        if (!failure.isEmpty()) {
            throw new Wrong(failure);
        }
    }

    /**
     * The message that refuses {@code worst}, or "" where it passes.
     *
     * @param isa the environment's {@code ONEDNN_MAX_CPU_ISA}, or null
     */
    static String verdict(Finding worst, String isa) {
        if (worst.error() <= TOLERANCE) { // false for NaN
            return "";
        }
        String off =
                Double.isNaN(worst.error())
                        ? "NaN"
                        : String.format(Locale.ROOT, "off by %.0f %%", 100 * worst.error());
        return "libtorch computes wrong convolutions on this CPU: the "
                + worst.quantity()
                + " of a "
                + worst.of().describe()
                + " is "
                + off
                + " (oneDNN's kernels, ONEDNN_MAX_CPU_ISA="
                + (isa == null ? "unset" : isa)
                + "); start the JVMs with ONEDNN_MAX_CPU_ISA=AVX (scripts/lib.sh does unless it is"
                + " set), or train on a GPU";
    }

    /** The case and quantity of {@code dimensions} furthest from double precision (NaN first). */
    static Finding worst(int dimensions) {
        Finding worst = null;
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            boolean gradMode = JniUtils.isGradMode(); // the manager loaded libtorch
            JniUtils.setGradMode(true);
            try {
                for (Case c : CASES) {
                    if (c.dimensions() != dimensions) {
                        continue;
                    }
                    float[][] single = run(c, DataType.FLOAT32, manager);
                    float[][] twice = run(c, DataType.FLOAT64, manager);
                    String[] quantities = {"output", "input gradient", "weight gradient"};
                    for (int q = 0; q < quantities.length; q++) {
                        Finding f =
                                new Finding(c, quantities[q], relativeError(single[q], twice[q]));
                        if (worst == null
                                || Double.isNaN(f.error())
                                || (!Double.isNaN(worst.error()) && f.error() > worst.error())) {
                            worst = f;
                        }
                    }
                }
            } finally {
                JniUtils.setGradMode(gradMode);
            }
        }
        return worst;
    }

    /** The largest difference relative to the largest reference value; NaN if any value is. */
    static double relativeError(float[] actual, float[] reference) {
        double diff = 0;
        double scale = 0;
        for (int i = 0; i < actual.length; i++) {
            double d = Math.abs((double) actual[i] - reference[i]);
            if (Double.isNaN(d)) {
                return Double.NaN;
            }
            diff = Math.max(diff, d);
            scale = Math.max(scale, Math.abs(reference[i]));
        }
        return scale == 0 ? diff : diff / scale;
    }

    /** Output, input gradient and weight gradient of {@code c} in {@code type}, as floats. */
    private static float[][] run(Case c, DataType type, NDManager parent) {
        try (NDManager m = parent.newSubManager()) {
            long[] volume = new long[c.dimensions()];
            long[] kernel = new long[c.dimensions()];
            long[] ones = new long[c.dimensions()];
            long[] padding = new long[c.dimensions()];
            Arrays.fill(volume, c.side());
            Arrays.fill(kernel, c.kernel());
            Arrays.fill(ones, 1);
            Arrays.fill(padding, c.kernel() / 2);
            Shape inShape = new Shape(c.batch(), c.in()).addAll(new Shape(volume));
            Shape outShape = new Shape(c.batch(), c.out()).addAll(new Shape(volume));
            Shape weightShape = new Shape(c.out(), c.in()).addAll(new Shape(kernel));
            NDArray x = random(m, inShape, 1, 1.0, type);
            NDArray w = random(m, weightShape, 2, 0.3, type);
            NDArray seen = random(m, outShape, 3, 1.0, type);
            x.setRequiresGradient(true);
            w.setRequiresGradient(true);
            NDArray y =
                    (c.dimensions() == 3
                                    ? Conv3d.conv3d(
                                            x,
                                            w,
                                            null,
                                            new Shape(ones),
                                            new Shape(padding),
                                            new Shape(ones))
                                    : Conv2d.conv2d(
                                            x,
                                            w,
                                            null,
                                            new Shape(ones),
                                            new Shape(padding),
                                            new Shape(ones)))
                            .singletonOrThrow();
            NDArray loss = y.mul(seen).sum();
            JniUtils.backward((PtNDArray) loss, (PtNDArray) m.ones(loss.getShape()), false, false);
            return new float[][] {floats(y), floats(x.getGradient()), floats(w.getGradient())};
        }
    }

    private static NDArray random(NDManager m, Shape shape, long seed, double scale, DataType t) {
        SplittableRandom random = new SplittableRandom(seed);
        float[] values = new float[Math.toIntExact(shape.size())];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * scale);
        }
        return m.create(values, shape).toType(t, true);
    }

    private static float[] floats(NDArray array) {
        return array.toType(DataType.FLOAT32, true).toFloatArray();
    }
}
