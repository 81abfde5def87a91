package io.minato.trainer.kits19.unet;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import io.minato.spi.Shape3;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

/**
 * Whole-volume inference as the MLPerf reference evaluates: patch-sized windows with 0.5 overlap,
 * each window's logits weighted by a Gaussian importance map (sigma = patch / 8) and summed, then
 * the argmax per voxel. A volume smaller than the patch is padded with its edge values.
 */
public final class SlidingWindow {
    private final Block model;
    private final int patch;
    private final int windowsPerForward;

    public SlidingWindow(Block model, int patch, int windowsPerForward) {
        if (patch % Unet3d.PATCH_DIVISOR != 0 || windowsPerForward < 1) {
            throw new IllegalArgumentException(
                    "patch must be a multiple of " + Unet3d.PATCH_DIVISOR + ": " + patch);
        }
        this.model = model;
        this.patch = patch;
        this.windowsPerForward = windowsPerForward;
    }

    /** The predicted label (0, 1, 2, ...) of every voxel of a (D, H, W) image, C order. */
    public byte[] predict(NDManager manager, float[] image, Shape3 shape) {
        return predict(manager, FloatBuffer.wrap(image), shape);
    }

    /**
     * The same from a buffer, such as a memory-mapped volume: windows are read from it directly, so
     * the volume is never copied whole.
     */
    public byte[] predict(NDManager manager, FloatBuffer image, Shape3 shape) {
        Shape3 padded =
                new Shape3(
                        Math.max(shape.d(), patch),
                        Math.max(shape.h(), patch),
                        Math.max(shape.w(), patch));
        int[] zs = starts(padded.d());
        int[] ys = starts(padded.h());
        int[] xs = starts(padded.w());
        int windows = zs.length * ys.length * xs.length;
        int p3 = patch * patch * patch;
        // The sums stay on the model's device: each window's logits are weighted and added there,
        // and only the labels come back.
        try (NDManager volume = manager.newSubManager()) {
            NDArray gauss = volume.create(gaussian(patch), new Shape(patch, patch, patch));
            NDArray scores = null;
            for (int first = 0; first < windows; first += windowsPerForward) {
                int count = Math.min(windowsPerForward, windows - first);
                float[] batch = new float[count * p3];
                for (int k = 0; k < count; k++) {
                    int[] o = origin(first + k, zs, ys, xs);
                    copyWindow(image, shape, o, batch, k * p3);
                }
                try (NDManager scope = volume.newSubManager()) {
                    NDArray x = scope.create(batch, new Shape(count, 1, patch, patch, patch));
                    NDArray out =
                            model.forward(new ParameterStore(scope, false), new NDList(x), false)
                                    .singletonOrThrow();
                    if (scores == null) {
                        long classes = out.getShape().get(1);
                        scores =
                                volume.zeros(
                                        new Shape(classes, padded.d(), padded.h(), padded.w()));
                    }
                    NDArray weighted = out.mul(gauss);
                    for (int k = 0; k < count; k++) {
                        int[] o = origin(first + k, zs, ys, xs);
                        NDIndex at = window(o[0], o[1], o[2], patch, patch, patch);
                        scores.set(at, scores.get(at).add(weighted.get(k)));
                    }
                }
            }
            // Back to the unpadded volume (the padding was centred, as in the crop). The weight
            // is common to all classes: the weighted sums' argmax is the weighted mean's.
            int oz = (padded.d() - shape.d()) / 2;
            int oy = (padded.h() - shape.h()) / 2;
            int ox = (padded.w() - shape.w()) / 2;
            byte[] labels = new byte[(int) shape.voxels()];
            int plane = shape.h() * shape.w();
            // A slab of slices at a time: the argmax's 8-byte indices of a whole large volume
            // would outweigh the sums themselves.
            for (int z = 0; z < shape.d(); z += ARGMAX_SLICES) {
                int slices = Math.min(ARGMAX_SLICES, shape.d() - z);
                try (NDManager slab = volume.newSubManager()) {
                    NDArray sums = scores.get(window(oz + z, oy, ox, slices, shape.h(), shape.w()));
                    sums.attach(slab);
                    NDArray best = sums.argMax(0).toType(DataType.INT8, false);
                    byte[] part = best.toByteArray();
                    System.arraycopy(part, 0, labels, z * plane, part.length);
                }
            }
            return labels;
        }
    }

    /** Slices whose labels are read off the sums at once. */
    private static final int ARGMAX_SLICES = 32;

    /** Every class of the box at (z, y, x) of size (d, h, w). */
    private static NDIndex window(int z, int y, int x, int d, int h, int w) {
        return new NDIndex(":, {}:{}, {}:{}, {}:{}", z, z + d, y, y + h, x, x + w);
    }

    /** Window starts along one axis: stride patch/2, the last one flush with the end. */
    int[] starts(int dim) {
        int stride = patch / 2;
        int count = dim <= patch ? 1 : (dim - patch + stride - 1) / stride + 1;
        int[] s = new int[count];
        for (int i = 0; i < count; i++) {
            s[i] = Math.min(i * stride, dim - patch);
        }
        return s;
    }

    /** exp(-d^2 / 2 sigma^2) per voxel of a window, sigma = patch / 8, peak 1. */
    static float[] gaussian(int patch) {
        double sigma = patch / 8.0;
        double c = (patch - 1) / 2.0;
        double[] g1 = new double[patch];
        for (int i = 0; i < patch; i++) {
            g1[i] = Math.exp(-(i - c) * (i - c) / (2 * sigma * sigma));
        }
        float[] g = new float[patch * patch * patch];
        for (int z = 0, i = 0; z < patch; z++) {
            for (int y = 0; y < patch; y++) {
                for (int x = 0; x < patch; x++, i++) {
                    // A floor keeps voxels at window corners from getting no weight at all.
                    g[i] = (float) Math.max(g1[z] * g1[y] * g1[x], 1e-6);
                }
            }
        }
        return g;
    }

    private static int[] origin(int window, int[] zs, int[] ys, int[] xs) {
        int x = window % xs.length;
        int y = window / xs.length % ys.length;
        int z = window / (xs.length * ys.length);
        return new int[] {zs[z], ys[y], xs[x]};
    }

    /** Copies a window at padded coordinates; outside the volume, the edge voxel repeats. */
    private void copyWindow(FloatBuffer image, Shape3 s, int[] o, float[] out, int offset) {
        int oz = (Math.max(s.d(), patch) - s.d()) / 2;
        int oy = (Math.max(s.h(), patch) - s.h()) / 2;
        int ox = (Math.max(s.w(), patch) - s.w()) / 2;
        for (int z = 0, i = offset; z < patch; z++) {
            int sz = clamp(o[0] + z - oz, s.d());
            for (int y = 0; y < patch; y++) {
                int sy = clamp(o[1] + y - oy, s.h());
                int row = (sz * s.h() + sy) * s.w();
                for (int x = 0; x < patch; x++, i++) {
                    out[i] = image.get(row + clamp(o[2] + x - ox, s.w()));
                }
            }
        }
    }

    private static int clamp(int v, int n) {
        return v < 0 ? 0 : (v >= n ? n - 1 : v);
    }

    /** Dice of one class between predicted and true labels; 1 when the class is in neither. */
    public static double dice(byte[] predicted, byte[] truth, int cls) {
        return dice(predicted, ByteBuffer.wrap(truth), cls);
    }

    /** The same against labels in a buffer, such as a memory-mapped label volume. */
    public static double dice(byte[] predicted, ByteBuffer truth, int cls) {
        long both = 0;
        long p = 0;
        long t = 0;
        for (int i = 0; i < predicted.length; i++) {
            boolean a = predicted[i] == cls;
            boolean b = truth.get(i) == cls;
            p += a ? 1 : 0;
            t += b ? 1 : 0;
            both += a && b ? 1 : 0;
        }
        return p + t == 0 ? 1.0 : 2.0 * both / (p + t);
    }
}
