package io.minato.workload.kits19;

import io.minato.spi.Patch;
import io.minato.spi.Shape3;

/** In-place reversal of a patch along one spatial axis (np.flip), image and label together. */
final class Flips {
    private Flips() {}

    static void flip(Patch patch, int axis) {
        Shape3 s = patch.shape();
        float[] image = patch.image();
        byte[] label = patch.label();
        int d = s.d();
        int h = s.h();
        int w = s.w();
        switch (axis) {
            case 0 -> {
                int plane = h * w;
                float[] tf = new float[plane];
                byte[] tb = new byte[plane];
                for (int a = 0, b = d - 1; a < b; a++, b--) {
                    swap(image, a * plane, b * plane, tf);
                    swap(label, a * plane, b * plane, tb);
                }
            }
            case 1 -> {
                float[] tf = new float[w];
                byte[] tb = new byte[w];
                for (int z = 0; z < d; z++) {
                    int base = z * h * w;
                    for (int a = 0, b = h - 1; a < b; a++, b--) {
                        swap(image, base + a * w, base + b * w, tf);
                        swap(label, base + a * w, base + b * w, tb);
                    }
                }
            }
            case 2 -> {
                for (int row = 0; row < d * h; row++) {
                    int base = row * w;
                    for (int a = base, b = base + w - 1; a < b; a++, b--) {
                        float f = image[a];
                        image[a] = image[b];
                        image[b] = f;
                        byte l = label[a];
                        label[a] = label[b];
                        label[b] = l;
                    }
                }
            }
            default -> throw new IllegalArgumentException("axis " + axis);
        }
    }

    private static void swap(float[] a, int i, int j, float[] tmp) {
        int n = tmp.length;
        System.arraycopy(a, i, tmp, 0, n);
        System.arraycopy(a, j, a, i, n);
        System.arraycopy(tmp, 0, a, j, n);
    }

    private static void swap(byte[] a, int i, int j, byte[] tmp) {
        int n = tmp.length;
        System.arraycopy(a, i, tmp, 0, n);
        System.arraycopy(a, j, a, i, n);
        System.arraycopy(tmp, 0, a, j, n);
    }
}
