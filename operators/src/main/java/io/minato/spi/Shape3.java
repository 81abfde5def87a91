package io.minato.spi;

import java.io.Serializable;

/** The spatial extent of a volume or patch, depth x height x width, C order. */
public record Shape3(int d, int h, int w) implements Serializable {
    public Shape3 {
        if (d <= 0 || h <= 0 || w <= 0) {
            throw new IllegalArgumentException(
                    "dimensions must be positive: " + d + "x" + h + "x" + w);
        }
    }

    public static Shape3 cube(int edge) {
        return new Shape3(edge, edge, edge);
    }

    public long voxels() {
        return (long) d * h * w;
    }

    public int get(int axis) {
        return switch (axis) {
            case 0 -> d;
            case 1 -> h;
            case 2 -> w;
            default -> throw new IllegalArgumentException("axis " + axis);
        };
    }

    @Override
    public String toString() {
        return d + "x" + h + "x" + w;
    }
}
