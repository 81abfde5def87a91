package io.minato.workload.kits19;

import io.minato.npy.NpyWriter;
import io.minato.spi.Shape3;
import java.nio.file.Path;
import java.util.SplittableRandom;

/** Small in-memory volumes with ellipsoid "kidneys" (1) holding "tumours" (2), for tests. */
public final class SyntheticVolumes {
    private SyntheticVolumes() {}

    /** Random ellipsoids of both classes plus a few isolated voxels; image = a smooth ramp. */
    public static Volume blobs(Shape3 s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] label = new byte[(int) s.voxels()];
        float[] image = new float[(int) s.voxels()];
        int kidneys = 1 + r.nextInt(2);
        for (int k = 0; k < kidneys; k++) {
            ellipsoid(label, s, r, 1, 3 + r.nextInt(Math.max(1, s.d() / 4)));
        }
        int tumours = 1 + r.nextInt(3);
        for (int t = 0; t < tumours; t++) {
            ellipsoid(label, s, r, 2, 1 + r.nextInt(4));
        }
        for (int i = 0; i < 5; i++) {
            label[r.nextInt(label.length)] = (byte) (1 + r.nextInt(2));
        }
        for (int i = 0; i < image.length; i++) {
            image[i] = (i % 997) / 997f + label[i];
        }
        return Volume.of("blobs-" + seed, s, image, label);
    }

    static void ellipsoid(byte[] label, Shape3 s, SplittableRandom r, int cls, int radius) {
        int cz = r.nextInt(s.d());
        int cy = r.nextInt(s.h());
        int cx = r.nextInt(s.w());
        double rz = radius * (0.6 + 0.8 * r.nextDouble());
        double ry = radius * (0.6 + 0.8 * r.nextDouble());
        double rx = radius * (0.6 + 0.8 * r.nextDouble());
        for (int z = 0; z < s.d(); z++) {
            for (int y = 0; y < s.h(); y++) {
                for (int x = 0; x < s.w(); x++) {
                    double dz = (z - cz) / rz;
                    double dy = (y - cy) / ry;
                    double dx = (x - cx) / rx;
                    if (dz * dz + dy * dy + dx * dx <= 1) {
                        label[(z * s.h() + y) * s.w() + x] = (byte) cls;
                    }
                }
            }
        }
    }

    /** image = 100 z + 10 y + x, so a patch shows where it came from and how it was flipped. */
    static Volume coordinates(Shape3 s, byte labelValue) {
        float[] image = new float[(int) s.voxels()];
        byte[] label = new byte[(int) s.voxels()];
        for (int z = 0, i = 0; z < s.d(); z++) {
            for (int y = 0; y < s.h(); y++) {
                for (int x = 0; x < s.w(); x++, i++) {
                    image[i] = 100 * z + 10 * y + x;
                    label[i] = labelValue;
                }
            }
        }
        return Volume.of("coordinates", s, image, label);
    }

    static Volume constant(Shape3 s, float value, byte labelValue) {
        float[] image = new float[(int) s.voxels()];
        byte[] label = new byte[(int) s.voxels()];
        java.util.Arrays.fill(image, value);
        java.util.Arrays.fill(label, labelValue);
        return Volume.of("constant", s, image, label);
    }

    /** Writes a volume as a case_..._x.npy / _y.npy pair, as the dataset layout has it. */
    public static CaseFiles write(Path into, String name, Volume v) throws java.io.IOException {
        Shape3 s = v.shape();
        long[] shape = {1, s.d(), s.h(), s.w()};
        float[] image = new float[(int) s.voxels()];
        byte[] label = new byte[(int) s.voxels()];
        v.image().get(0, image);
        v.label().get(0, label);
        Path x = into.resolve(name + "_x.npy");
        Path y = into.resolve(name + "_y.npy");
        NpyWriter.writeFloat32(x, shape, image);
        NpyWriter.writeUint8(y, shape, label);
        return new CaseFiles(name, x, y);
    }
}
