package io.minato.workload.kits19;

/**
 * The kidney and tumour labels of one case, rasterised once in the box around the organs (a few MB
 * at full scale, far less than the volume) so that they can be cleaned as a whole before any slice
 * is written.
 *
 * <p>Tumours drawn over a kidney leave slivers of kidney, often single voxels, that no annotator
 * would draw; those are given to the tumour they touch, or to the background.
 */
final class OrganMask {

    // A kidney component below this share of the largest one is a sliver, not a kidney.
    private static final double SLIVER_FRACTION = 0.05;
    // ... and so is one of a few voxels; the largest component is kept whatever its size.
    private static final int MIN_KIDNEY_VOXELS = 4;
    private static final byte VISITED = 3;

    final int z0;
    final int y0;
    final int x0;
    final int depth;
    final int height;
    final int width;
    private final byte[] labels;

    private OrganMask(int z0, int y0, int x0, int depth, int height, int width) {
        this.z0 = z0;
        this.y0 = y0;
        this.x0 = x0;
        this.depth = depth;
        this.height = height;
        this.width = width;
        this.labels = new byte[Math.multiplyExact(Math.multiplyExact(depth, height), width)];
    }

    /**
     * Rasterises kidneys, then tumours over them, within a volume of the given size; removes kidney
     * slivers; and, if tumours left no kidney voxel at all (only at tiny scales), labels the kidney
     * centres, which are never tumour centres, as kidney.
     */
    static OrganMask build(
            int volumeDepth,
            int volumeHeight,
            int volumeWidth,
            Ellipsoid[] kidneys,
            Ellipsoid[] tumourParts,
            int[][] kidneyCentres) {
        int[] lo = {Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE};
        int[] hi = {Integer.MIN_VALUE, Integer.MIN_VALUE, Integer.MIN_VALUE};
        int[] size = {volumeDepth, volumeHeight, volumeWidth};
        for (Ellipsoid[] shapes : new Ellipsoid[][] {kidneys, tumourParts}) {
            for (Ellipsoid e : shapes) {
                double[] c = {e.cz, e.cy, e.cx};
                double[] r = {e.rz, e.ry, e.rx};
                for (int a = 0; a < 3; a++) {
                    lo[a] = Math.min(lo[a], (int) Math.max(0, Math.floor(c[a] - r[a])));
                    hi[a] = Math.max(hi[a], (int) Math.min(size[a] - 1, Math.ceil(c[a] + r[a])));
                }
            }
        }
        OrganMask mask =
                new OrganMask(
                        lo[0],
                        lo[1],
                        lo[2],
                        hi[0] - lo[0] + 1,
                        hi[1] - lo[1] + 1,
                        hi[2] - lo[2] + 1);
        mask.paint(kidneys, KitsCase.KIDNEY, volumeWidth);
        mask.paint(tumourParts, KitsCase.TUMOUR, volumeWidth);
        if (!mask.removeKidneySlivers()) {
            for (int[] c : kidneyCentres) {
                mask.labels[mask.index(c[0], c[1], c[2])] = KitsCase.KIDNEY;
            }
        }
        return mask;
    }

    /** The label at volume voxel (z, y, x), which must lie in the box. */
    byte label(int z, int y, int x) {
        return labels[index(z, y, x)];
    }

    boolean coversRow(int z, int y) {
        return z >= z0 && z < z0 + depth && y >= y0 && y < y0 + height;
    }

    private int index(int z, int y, int x) {
        return ((z - z0) * height + (y - y0)) * width + (x - x0);
    }

    private void paint(Ellipsoid[] shapes, byte value, int volumeWidth) {
        for (Ellipsoid e : shapes) {
            for (int z = z0; z < z0 + depth; z++) {
                for (int y = y0; y < y0 + height; y++) {
                    double rem = e.rowRemainder(z, y);
                    if (rem <= 0) {
                        continue;
                    }
                    int last = e.lastX(rem, volumeWidth);
                    for (int x = e.firstX(rem); x <= last; x++) {
                        labels[index(z, y, x)] = value;
                    }
                }
            }
        }
    }

    /**
     * Finds the 6-connected kidney components and relabels those much smaller than the largest.
     *
     * @return whether any kidney voxel is left
     */
    private boolean removeKidneySlivers() {
        int kidneyVoxels = 0;
        for (byte b : labels) {
            kidneyVoxels += b == KitsCase.KIDNEY ? 1 : 0;
        }
        if (kidneyVoxels == 0) {
            return false;
        }
        // Components are stored one after another in `order`; starts[k] is where component k
        // begins. Each voxel is queued once, so the array doubles as the breadth-first queue.
        int[] order = new int[kidneyVoxels];
        int[] starts = new int[kidneyVoxels + 1];
        int components = 0;
        int end = 0;
        for (int seed = 0; seed < labels.length; seed++) {
            if (labels[seed] != KitsCase.KIDNEY) {
                continue;
            }
            starts[components++] = end;
            labels[seed] = VISITED;
            order[end++] = seed;
            for (int head = starts[components - 1]; head < end; head++) {
                end = visitNeighbours(order[head], order, end);
            }
        }
        starts[components] = end;
        int largest = 0;
        for (int k = 1; k < components; k++) {
            if (starts[k + 1] - starts[k] > starts[largest + 1] - starts[largest]) {
                largest = k;
            }
        }
        double sliverBelow =
                Math.max(
                        MIN_KIDNEY_VOXELS,
                        SLIVER_FRACTION * (starts[largest + 1] - starts[largest]));
        for (int k = 0; k < components; k++) {
            boolean sliver = k != largest && starts[k + 1] - starts[k] < sliverBelow;
            for (int i = starts[k]; i < starts[k + 1]; i++) {
                labels[order[i]] = KitsCase.KIDNEY;
            }
            if (sliver) {
                byte heir = touchesTumour(order, starts[k], starts[k + 1]) ? KitsCase.TUMOUR : 0;
                for (int i = starts[k]; i < starts[k + 1]; i++) {
                    labels[order[i]] = heir;
                }
            }
        }
        return true;
    }

    private int visitNeighbours(int i, int[] queue, int end) {
        int x = i % width;
        int y = (i / width) % height;
        int z = i / (width * height);
        int plane = width * height;
        if (x > 0) end = visit(i - 1, queue, end);
        if (x < width - 1) end = visit(i + 1, queue, end);
        if (y > 0) end = visit(i - width, queue, end);
        if (y < height - 1) end = visit(i + width, queue, end);
        if (z > 0) end = visit(i - plane, queue, end);
        if (z < depth - 1) end = visit(i + plane, queue, end);
        return end;
    }

    private int visit(int i, int[] queue, int end) {
        if (labels[i] == KitsCase.KIDNEY) {
            labels[i] = VISITED;
            queue[end++] = i;
        }
        return end;
    }

    private boolean touchesTumour(int[] order, int from, int to) {
        int plane = width * height;
        for (int k = from; k < to; k++) {
            int i = order[k];
            int x = i % width;
            int y = (i / width) % height;
            int z = i / plane;
            if ((x > 0 && labels[i - 1] == KitsCase.TUMOUR)
                    || (x < width - 1 && labels[i + 1] == KitsCase.TUMOUR)
                    || (y > 0 && labels[i - width] == KitsCase.TUMOUR)
                    || (y < height - 1 && labels[i + width] == KitsCase.TUMOUR)
                    || (z > 0 && labels[i - plane] == KitsCase.TUMOUR)
                    || (z < depth - 1 && labels[i + plane] == KitsCase.TUMOUR)) {
                return true;
            }
        }
        return false;
    }
}
