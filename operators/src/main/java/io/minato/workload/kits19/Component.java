package io.minato.workload.kits19;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;

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

    /** Bytes {@link #writeTo} writes. */
    public static final int SERIALIZED_BYTES = 1 + 6 * 4 + 2 * 8;

    public void writeTo(DataOutput out) throws IOException {
        out.writeByte(cls);
        out.writeInt(z0);
        out.writeInt(z1);
        out.writeInt(y0);
        out.writeInt(y1);
        out.writeInt(x0);
        out.writeInt(x1);
        out.writeLong(voxels);
        out.writeLong(firstVoxel);
    }

    public static Component readFrom(DataInput in) throws IOException {
        return new Component(
                in.readUnsignedByte(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readLong(),
                in.readLong());
    }

    public int stop(int axis) {
        return switch (axis) {
            case 0 -> z1;
            case 1 -> y1;
            default -> x1;
        };
    }
}
