package io.minato.workload.kits19;

/**
 * An axis-aligned ellipsoid in voxel coordinates (z, y, x), rasterised one image row at a time. An
 * infinite z semi-axis makes it a cylinder along z (the body, the spine).
 */
final class Ellipsoid {

    final double cz;
    final double cy;
    final double cx;
    final double rz;
    final double ry;
    final double rx;

    Ellipsoid(double cz, double cy, double cx, double rz, double ry, double rx) {
        this.cz = cz;
        this.cy = cy;
        this.cx = cx;
        this.rz = rz;
        this.ry = ry;
        this.rx = rx;
    }

    /**
     * What is left of 1 after the z and y terms of row (z, y): the row crosses the ellipsoid iff it
     * is positive.
     */
    double rowRemainder(int z, int y) {
        double dz = (z - cz) / rz;
        double dy = (y - cy) / ry;
        return 1.0 - dz * dz - dy * dy;
    }

    /** First x of the row inside, clamped to the image; {@code remainder} must be positive. */
    int firstX(double remainder) {
        return (int) Math.max(0, Math.ceil(cx - rx * Math.sqrt(remainder)));
    }

    /** Last x of the row inside, clamped to the image of the given width. */
    int lastX(double remainder, int width) {
        return (int) Math.min(width - 1, Math.floor(cx + rx * Math.sqrt(remainder)));
    }

    /** Squared normalised radius of voxel x in a row: 0 at the centre, 1 on the surface. */
    double radius2(double remainder, int x) {
        double dx = (x - cx) / rx;
        return 1.0 - remainder + dx * dx;
    }

    /** Distance from the centre to the surface along the unit vector (uz, uy, ux). */
    double extent(double uz, double uy, double ux) {
        double a = uz / rz;
        double b = uy / ry;
        double c = ux / rx;
        return 1.0 / Math.sqrt(a * a + b * b + c * c);
    }
}
