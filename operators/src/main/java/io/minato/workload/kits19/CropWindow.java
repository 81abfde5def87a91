package io.minato.workload.kits19;

import io.minato.spi.SampleKey;
import io.minato.spi.SampleRandom;
import io.minato.spi.Shape3;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

/**
 * Where {@link Preparation}'s patch-sized window lies in the volume, padded (centred, edge mode) to
 * at least the patch: anywhere (the uniform crop), or around one of the two largest connected
 * components of a random foreground class (the MLPerf reference's rand_foreg_cropd), moved where
 * needed so that it holds foreground.
 */
final class CropWindow {
    private CropWindow() {}

    /**
     * The window's origin in the padded volume around a component of {@code components}, the
     * volume's foreground; uniform when it has none.
     */
    static int[] foreground(
            SampleKey key, Volume volume, Shape3 patchShape, List<Component> components) {
        SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.CROP_PICK, 0);
        Shape3 paddedShape = padded(volume.shape(), patchShape);
        TreeSet<Integer> classes = new TreeSet<>();
        for (Component c : components) {
            classes.add(c.cls());
        }
        if (classes.isEmpty()) {
            // No foreground at all: the reference falls back to a uniform crop.
            return uniformOrigin(paddedShape, patchShape, random);
        }
        List<Integer> classList = new ArrayList<>(classes);
        int cls = classList.get(random.nextInt(classList.size()));
        // The two components of that class with the largest bounding boxes, in ascending order as
        // np.argsort(volumes)[-2:] gives them (ties broken by scan order).
        List<Component> ofClass = new ArrayList<>();
        for (Component c : components) {
            if (c.cls() == cls) {
                ofClass.add(c);
            }
        }
        ofClass.sort(
                Comparator.comparingLong(Component::boxVolume)
                        .thenComparingLong(Component::firstVoxel));
        List<Component> largest = ofClass.subList(Math.max(0, ofClass.size() - 2), ofClass.size());
        Component chosen = largest.get(random.nextInt(largest.size()));

        int[] offset = padOffset(volume.shape(), patchShape);
        int[] low = new int[3];
        for (int axis = 0; axis < 3; axis++) {
            low[axis] =
                    adjust(
                            chosen.start(axis) + offset[axis],
                            chosen.stop(axis) + offset[axis],
                            patchShape.get(axis),
                            paddedShape.get(axis),
                            random);
        }
        // When the component's box is larger than the patch, the reference's window can miss the
        // component; move it the least distance that brings the component's first voxel inside.
        if (!windowHolds(volume, patchShape, offset, low, cls)) {
            Shape3 s = volume.shape();
            long f = chosen.firstVoxel();
            int[] firstVoxel = {
                (int) (f / ((long) s.h() * s.w())) + offset[0],
                (int) (f / s.w() % s.h()) + offset[1],
                (int) (f % s.w()) + offset[2]
            };
            for (int axis = 0; axis < 3; axis++) {
                int p = patchShape.get(axis);
                if (firstVoxel[axis] < low[axis]) {
                    low[axis] = firstVoxel[axis];
                } else if (firstVoxel[axis] >= low[axis] + p) {
                    low[axis] = firstVoxel[axis] - p + 1;
                }
            }
        }
        return low;
    }

    /** The reference's adjust(): a patch-sized window around [start, stop) on one axis. */
    private static int adjust(int start, int stop, int patch, int dim, SampleRandom random) {
        int diff = patch - (stop - start);
        int sign = diff < 0 ? -1 : 1;
        diff = Math.abs(diff);
        int ladj = diff == 0 ? 0 : random.nextInt(diff);
        int hadj = diff - ladj;
        int low = Math.max(0, start - sign * ladj);
        int high = Math.min(dim, stop + sign * hadj);
        diff = patch - (high - low);
        if (diff > 0 && low == 0) {
            high += diff;
        } else if (diff > 0) {
            low -= diff;
        }
        return low;
    }

    private static boolean windowHolds(
            Volume volume, Shape3 patch, int[] offset, int[] low, int cls) {
        Shape3 s = volume.shape();
        ByteBuffer label = volume.label();
        int z0 = Math.max(0, low[0] - offset[0]);
        int z1 = Math.min(s.d(), low[0] + patch.d() - offset[0]);
        int y0 = Math.max(0, low[1] - offset[1]);
        int y1 = Math.min(s.h(), low[1] + patch.h() - offset[1]);
        int x0 = Math.max(0, low[2] - offset[2]);
        int x1 = Math.min(s.w(), low[2] + patch.w() - offset[2]);
        byte wanted = (byte) cls;
        for (int z = z0; z < z1; z++) {
            for (int y = y0; y < y1; y++) {
                int row = (z * s.h() + y) * s.w();
                for (int x = x0; x < x1; x++) {
                    if (label.get(row + x) == wanted) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** A window anywhere in the padded volume: the reference's uniform crop. */
    static int[] uniform(Shape3 volume, Shape3 patch, SampleRandom random) {
        return uniformOrigin(padded(volume, patch), patch, random);
    }

    private static int[] uniformOrigin(Shape3 paddedShape, Shape3 patch, SampleRandom random) {
        int[] o = new int[3];
        for (int axis = 0; axis < 3; axis++) {
            int range = paddedShape.get(axis) - patch.get(axis);
            o[axis] = range == 0 ? 0 : random.nextInt(range);
        }
        return o;
    }

    /**
     * The volume padded (centred, edge mode, as the MLPerf preprocessing) to at least the patch.
     */
    static Shape3 padded(Shape3 volume, Shape3 patch) {
        return new Shape3(
                Math.max(volume.d(), patch.d()),
                Math.max(volume.h(), patch.h()),
                Math.max(volume.w(), patch.w()));
    }

    static int[] padOffset(Shape3 volume, Shape3 patch) {
        return new int[] {
            Math.max(0, patch.d() - volume.d()) / 2,
            Math.max(0, patch.h() - volume.h()) / 2,
            Math.max(0, patch.w() - volume.w()) / 2
        };
    }
}
