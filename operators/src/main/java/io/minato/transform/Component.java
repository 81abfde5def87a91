package io.minato.transform;

/**
 * One 6-connected component of one label class: its bounding box as half-open ranges (like a Python
 * slice), its size, and the first of its voxels in C order.
 */
public record Component(
        int cls, int z0, int z1, int y0, int y1, int x0, int x1, long voxels, long firstVoxel) {

    public long boxVolume() {
        return (long) (z1 - z0) * (y1 - y0) * (x1 - x0);
    }

    public int start(int axis) {
        return switch (axis) {
            case 0 -> z0;
            case 1 -> y0;
            default -> x0;
        };
    }

    public int stop(int axis) {
        return switch (axis) {
            case 0 -> z1;
            case 1 -> y1;
            default -> x1;
        };
    }
}
