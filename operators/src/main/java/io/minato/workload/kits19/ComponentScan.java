package io.minato.workload.kits19;

import io.minato.spi.Shape3;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Labels the 6-connected components of every non-zero class of a label volume, a slab of slices at
 * a time, so that the heaviest step of RandBalancedCrop can stop and resume anywhere.
 *
 * <p>Between slabs the state is small: the components already closed, the open ones (touching the
 * last slice scanned) and that slice's component ids. A union-find over provisional ids joins
 * components that meet inside a slab; at the end of each slab it is folded into the open table.
 */
public final class ComponentScan {
    private final Shape3 shape;
    private int nextZ;

    /** Open component ids (1..open.size()) of slice nextZ - 1; 0 is background. */
    private int[] boundary;

    private final List<Component> closed;
    private final Labels open;

    public ComponentScan(Shape3 shape) {
        this.shape = shape;
        this.boundary = new int[shape.h() * shape.w()];
        this.closed = new ArrayList<>();
        this.open = new Labels();
    }

    public Shape3 shape() {
        return shape;
    }

    /** The next slice to scan; equals the depth when the scan is complete. */
    public int nextSlice() {
        return nextZ;
    }

    public boolean isComplete() {
        return nextZ == shape.d();
    }

    /** Scans slices [nextSlice(), zEnd) of the label volume (C order, uint8). */
    public void scan(ByteBuffer label, int zEnd) {
        if (zEnd < nextZ || zEnd > shape.d()) {
            throw new IllegalArgumentException(
                    "slab end " + zEnd + " outside [" + nextZ + ", " + shape.d() + "]");
        }
        int h = shape.h();
        int w = shape.w();
        int plane = h * w;
        byte[] slice = new byte[plane];
        int[] current = new int[plane];
        int[] previous = boundary;
        Labels labels = open;
        for (int z = nextZ; z < zEnd; z++) {
            label.get((int) ((long) z * plane), slice, 0, plane);
            for (int y = 0, i = 0; y < h; y++) {
                for (int x = 0; x < w; x++, i++) {
                    int c = slice[i];
                    if (c == 0) {
                        current[i] = 0;
                        continue;
                    }
                    int id = 0;
                    if (x > 0 && slice[i - 1] == c) {
                        id = current[i - 1];
                    }
                    if (y > 0 && slice[i - w] == c) {
                        int up = current[i - w];
                        // Most neighbours already share an id: skip the union-find then.
                        id = id == 0 || id == up ? up : labels.union(id, up);
                    }
                    int back = previous[i];
                    if (back != 0 && labels.cls[back] == (c & 0xFF)) {
                        id = id == 0 || id == back ? back : labels.union(id, back);
                    }
                    if (id == 0) {
                        id = labels.add(c & 0xFF, (long) z * plane + i);
                    }
                    current[i] = id;
                    labels.include(id, z, y, x);
                }
            }
            int[] t = previous;
            previous = current;
            current = t;
        }
        nextZ = zEnd;
        boundary = previous;
        compact();
    }

    /** The components found; complete only once {@link #isComplete()}. */
    public List<Component> components() {
        if (!isComplete()) {
            throw new IllegalStateException("scan stopped at slice " + nextZ + " of " + shape.d());
        }
        return List.copyOf(closed);
    }

    /**
     * Folds provisional ids into their roots, closes components that no longer touch the slab end.
     */
    private void compact() {
        Labels labels = open;
        int n = labels.size;
        int[] root = new int[n + 1];
        for (int id = 1; id <= n; id++) {
            root[id] = labels.find(id);
            if (root[id] != id) {
                labels.mergeStatsInto(root[id], id);
            }
        }
        boolean[] touches = new boolean[n + 1];
        for (int i = 0; i < boundary.length; i++) {
            if (boundary[i] != 0) {
                touches[root[boundary[i]]] = true;
            }
        }
        int[] renumber = new int[n + 1];
        Labels next = new Labels();
        for (int id = 1; id <= n; id++) {
            if (root[id] != id) {
                continue;
            }
            if (touches[id] && !isComplete()) {
                renumber[id] = next.copyFrom(labels, id);
            } else {
                closed.add(labels.toComponent(id));
            }
        }
        for (int i = 0; i < boundary.length; i++) {
            int b = boundary[i];
            boundary[i] = b == 0 || isComplete() ? 0 : renumber[root[b]];
        }
        labels.replaceWith(next);
    }

    public void writeTo(DataOutput out) throws IOException {
        out.writeInt(shape.d());
        out.writeInt(shape.h());
        out.writeInt(shape.w());
        out.writeInt(nextZ);
        out.writeInt(closed.size());
        for (Component c : closed) {
            c.writeTo(out);
        }
        out.writeInt(open.size);
        for (int id = 1; id <= open.size; id++) {
            open.toComponent(id).writeTo(out);
        }
        // The boundary slice is mostly background: run-length encode it.
        int i = 0;
        while (i < boundary.length) {
            int v = boundary[i];
            int j = i;
            while (j < boundary.length && boundary[j] == v) {
                j++;
            }
            out.writeInt(v);
            out.writeInt(j - i);
            i = j;
        }
    }

    public static ComponentScan readFrom(DataInput in) throws IOException {
        ComponentScan scan =
                new ComponentScan(new Shape3(in.readInt(), in.readInt(), in.readInt()));
        scan.nextZ = in.readInt();
        int closedCount = in.readInt();
        for (int k = 0; k < closedCount; k++) {
            scan.closed.add(Component.readFrom(in));
        }
        int openCount = in.readInt();
        for (int k = 0; k < openCount; k++) {
            scan.open.addComponent(Component.readFrom(in));
        }
        int i = 0;
        while (i < scan.boundary.length) {
            int v = in.readInt();
            int run = in.readInt();
            if (run <= 0 || i + run > scan.boundary.length || v < 0 || v > openCount) {
                throw new IOException("corrupt component scan state at voxel " + i);
            }
            Arrays.fill(scan.boundary, i, i + run, v);
            i += run;
        }
        return scan;
    }

    /** Provisional component ids with union-find and per-id statistics; index 0 is unused. */
    private static final class Labels {
        int size;
        int[] parent = new int[16];
        int[] cls = new int[16];
        int[] z0 = new int[16];
        int[] z1 = new int[16];
        int[] y0 = new int[16];
        int[] y1 = new int[16];
        int[] x0 = new int[16];
        int[] x1 = new int[16];
        long[] voxels = new long[16];
        long[] first = new long[16];

        int add(int c, long firstVoxel) {
            int id = ++size;
            if (id == parent.length) {
                grow();
            }
            parent[id] = id;
            cls[id] = c;
            z0[id] = Integer.MAX_VALUE;
            y0[id] = Integer.MAX_VALUE;
            x0[id] = Integer.MAX_VALUE;
            z1[id] = Integer.MIN_VALUE;
            y1[id] = Integer.MIN_VALUE;
            x1[id] = Integer.MIN_VALUE;
            voxels[id] = 0;
            first[id] = firstVoxel;
            return id;
        }

        int addComponent(Component c) {
            int id = add(c.cls(), c.firstVoxel());
            z0[id] = c.z0();
            z1[id] = c.z1();
            y0[id] = c.y0();
            y1[id] = c.y1();
            x0[id] = c.x0();
            x1[id] = c.x1();
            voxels[id] = c.voxels();
            return id;
        }

        int copyFrom(Labels other, int id) {
            return addComponent(other.toComponent(id));
        }

        void include(int id, int z, int y, int x) {
            if (z < z0[id]) z0[id] = z;
            if (z + 1 > z1[id]) z1[id] = z + 1;
            if (y < y0[id]) y0[id] = y;
            if (y + 1 > y1[id]) y1[id] = y + 1;
            if (x < x0[id]) x0[id] = x;
            if (x + 1 > x1[id]) x1[id] = x + 1;
            voxels[id]++;
        }

        int find(int id) {
            int r = id;
            while (parent[r] != r) {
                r = parent[r];
            }
            while (parent[id] != r) {
                int next = parent[id];
                parent[id] = r;
                id = next;
            }
            return r;
        }

        /** Joins the two sets; the smaller root id survives so that ids stay in scan order. */
        int union(int a, int b) {
            int ra = find(a);
            int rb = find(b);
            if (ra == rb) {
                return ra;
            }
            int keep = Math.min(ra, rb);
            parent[Math.max(ra, rb)] = keep;
            return keep;
        }

        void mergeStatsInto(int to, int from) {
            z0[to] = Math.min(z0[to], z0[from]);
            z1[to] = Math.max(z1[to], z1[from]);
            y0[to] = Math.min(y0[to], y0[from]);
            y1[to] = Math.max(y1[to], y1[from]);
            x0[to] = Math.min(x0[to], x0[from]);
            x1[to] = Math.max(x1[to], x1[from]);
            voxels[to] += voxels[from];
            first[to] = Math.min(first[to], first[from]);
        }

        Component toComponent(int id) {
            return new Component(
                    cls[id], z0[id], z1[id], y0[id], y1[id], x0[id], x1[id], voxels[id], first[id]);
        }

        void replaceWith(Labels other) {
            size = other.size;
            parent = other.parent;
            cls = other.cls;
            z0 = other.z0;
            z1 = other.z1;
            y0 = other.y0;
            y1 = other.y1;
            x0 = other.x0;
            x1 = other.x1;
            voxels = other.voxels;
            first = other.first;
        }

        private void grow() {
            int n = parent.length * 2;
            parent = Arrays.copyOf(parent, n);
            cls = Arrays.copyOf(cls, n);
            z0 = Arrays.copyOf(z0, n);
            z1 = Arrays.copyOf(z1, n);
            y0 = Arrays.copyOf(y0, n);
            y1 = Arrays.copyOf(y1, n);
            x0 = Arrays.copyOf(x0, n);
            x1 = Arrays.copyOf(x1, n);
            voxels = Arrays.copyOf(voxels, n);
            first = Arrays.copyOf(first, n);
        }
    }
}
