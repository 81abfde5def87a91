package io.minato.spi;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A prepared training sample: a float32 input of {@link #shape} (C order) and its target as bytes.
 *
 * <p>The target is either dense, one uint8 class per input element (3D segmentation: the label
 * patch), or a class index ({@link #ofClass}: image classification, four bytes, little-endian
 * int32, the layout a trainer hands to its engine as it is). Which one a workload makes is its own
 * business; the loader moves and recycles both alike.
 *
 * <p>A third form holds no arrays at all: a {@link SharedSample} ({@link #shared}), the handle of a
 * sample of any structure that a process outside the JVM wrote into shared memory (the Python
 * workload). The loader moves its handle as it moves a patch; only a trainer outside the JVM can
 * train on it, so {@link #shape}, {@link #image} and {@link #label} refuse it.
 */
public final class Patch {
    /** Bytes {@link #writeTo} writes before the arrays: the shape and the target's length. */
    public static final int HEADER_BYTES = 4 * Integer.BYTES;

    /** Bytes of a class-index target. */
    public static final int CLASS_BYTES = Integer.BYTES;

    /** What {@link #writeTo} writes first for a {@link SharedSample}: no shape is negative. */
    private static final int SHARED_MARK = -1;

    private final Shape3 shape;
    private final float[] image;
    private final byte[] label;
    private final SharedSample shared;

    private Patch(SharedSample shared) {
        this.shape = null;
        this.image = null;
        this.label = null;
        this.shared = shared;
    }

    /** A sample whose bytes are in shared memory, outside the JVM. */
    public static Patch shared(SharedSample sample) {
        return new Patch(java.util.Objects.requireNonNull(sample, "sample"));
    }

    /** The handle of a sample in shared memory; null for a patch of arrays. */
    public SharedSample sharedSample() {
        return shared;
    }

    public Patch(Shape3 shape, float[] image, byte[] label) {
        if (image.length != shape.voxels()) {
            throw new IllegalArgumentException(
                    "patch image of " + image.length + " values does not match " + shape);
        }
        if (label.length == 0) {
            throw new IllegalArgumentException("a patch needs a target");
        }
        this.shape = shape;
        this.image = image;
        this.label = label;
        this.shared = null;
    }

    /** A deep copy (transforms and trainers write into the arrays); a shared sample is itself. */
    public Patch copy() {
        return shared != null ? this : new Patch(shape, image.clone(), label.clone());
    }

    private IllegalStateException noArrays() {
        return new IllegalStateException(
                "sample " + shared.file() + " is in shared memory: it has no arrays in the JVM");
    }

    /** A sample whose target is one class index. */
    public static Patch ofClass(Shape3 shape, float[] image, int cls) {
        Patch p = new Patch(shape, image, new byte[CLASS_BYTES]);
        p.setClassIndex(cls);
        return p;
    }

    public Shape3 shape() {
        if (shared != null) {
            throw noArrays();
        }
        return shape;
    }

    /** The input values; transforms update them in place. */
    public float[] image() {
        if (shared != null) {
            throw noArrays();
        }
        return image;
    }

    /** The target's bytes; transforms update them in place. */
    public byte[] label() {
        if (shared != null) {
            throw noArrays();
        }
        return label;
    }

    /** Whether the target holds one class per input element (a segmentation label). */
    public boolean denseLabel() {
        return shared == null && label.length == shape.voxels();
    }

    /** The class index of a classification target. */
    public int classIndex() {
        if (shared != null || label.length != CLASS_BYTES || denseLabel()) {
            throw new IllegalStateException("the patch's target is not a class index");
        }
        return (label[0] & 0xFF)
                | (label[1] & 0xFF) << 8
                | (label[2] & 0xFF) << 16
                | (label[3] & 0xFF) << 24;
    }

    /** Sets a classification target (the arrays may be recycled ones). */
    public void setClassIndex(int cls) {
        if (shared != null || label.length != CLASS_BYTES) {
            throw new IllegalStateException("the patch's target is not a class index");
        }
        label[0] = (byte) cls;
        label[1] = (byte) (cls >>> 8);
        label[2] = (byte) (cls >>> 16);
        label[3] = (byte) (cls >>> 24);
    }

    /** Bytes its arrays occupy in the JVM: float32 input and the target; 0 for a shared one. */
    public long bytes() {
        return shared != null ? 0 : (long) Float.BYTES * shape.voxels() + label.length;
    }

    public boolean sameContent(Patch other) {
        if (shared != null || other.shared != null) {
            return java.util.Objects.equals(shared, other.shared);
        }
        return shape.equals(other.shape)
                && Arrays.equals(image, other.image)
                && Arrays.equals(label, other.label);
    }

    // ---- one binary layout for every place a patch is written: records, preparation states ----

    /**
     * Largest target a reader accepts beyond a dense one: a corrupt length fails, not allocates.
     */
    private static final int MAX_SPARSE_LABEL = 1 << 20;

    /**
     * Writes the shape (three ints), the target's length, the input as little-endian float32 and
     * the target's bytes; for a shared sample, {@link #SHARED_MARK} and its handle.
     */
    public void writeTo(DataOutput out) throws IOException {
        if (shared != null) {
            out.writeInt(SHARED_MARK);
            shared.writeTo(out);
            return;
        }
        out.writeInt(shape.d());
        out.writeInt(shape.h());
        out.writeInt(shape.w());
        out.writeInt(label.length);
        FloatIo.write(image, out);
        out.write(label);
    }

    /** Bytes {@link #writeTo} writes. */
    public long serializedBytes() {
        return shared != null ? Integer.BYTES + shared.toBytes().length : HEADER_BYTES + bytes();
    }

    /**
     * Writes bytes {@code [from, from + length)} of what {@link #writeTo} writes, and only those: a
     * range of a patch sent in pieces, without serializing the whole patch first.
     */
    public void writeRange(DataOutput out, long from, int length) throws IOException {
        long end = from + length;
        if (from < 0 || length < 0 || end > serializedBytes()) {
            throw new IllegalArgumentException(
                    "range " + from + "+" + length + " of a patch of " + serializedBytes());
        }
        if (shared != null) {
            ByteBuffer whole = ByteBuffer.allocate((int) serializedBytes());
            whole.putInt(SHARED_MARK).put(shared.toBytes());
            out.write(whole.array(), (int) from, length);
            return;
        }
        long at = from;
        if (at < HEADER_BYTES && at < end) {
            ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES); // big-endian, as DataOutput
            header.putInt(shape.d()).putInt(shape.h()).putInt(shape.w()).putInt(label.length);
            int n = (int) (Math.min(end, HEADER_BYTES) - at);
            out.write(header.array(), (int) at, n);
            at += n;
        }
        long imageEnd = HEADER_BYTES + (long) Float.BYTES * image.length;
        if (at < imageEnd && at < end) {
            long n = Math.min(end, imageEnd) - at;
            FloatIo.writeRange(image, at - HEADER_BYTES, n, out);
            at += n;
        }
        if (at < end) {
            out.write(label, (int) (at - imageEnd), (int) (end - at));
        }
    }

    /** Reads what {@link #writeTo} wrote, into fresh arrays. */
    public static Patch readFrom(DataInput in) throws IOException {
        int first = in.readInt();
        if (first == SHARED_MARK) {
            return new Patch(SharedSample.readFrom(in));
        }
        Shape3 shape = readShape(first, in);
        int labelBytes = readLabelLength(in, shape);
        float[] image = new float[(int) shape.voxels()];
        FloatIo.readFully(in, image);
        byte[] label = new byte[labelBytes];
        in.readFully(label);
        return new Patch(shape, image, label);
    }

    /** Reads a written patch's shape, failing on one no patch can have. */
    public static Shape3 readShape(DataInput in) throws IOException {
        return readShape(in.readInt(), in);
    }

    /**
     * Whether the int a written patch begins with marks a shared sample, whose handle {@link
     * #readShared} then reads; otherwise it is the first edge of the shape ({@link #readShape(int,
     * DataInput)}).
     */
    public static boolean marksShared(int first) {
        return first == SHARED_MARK;
    }

    /** Reads the handle of a shared sample after its mark. */
    public static Patch readShared(DataInput in) throws IOException {
        return new Patch(SharedSample.readFrom(in));
    }

    /** Reads a written patch's shape whose first edge {@code d} was read already. */
    public static Shape3 readShape(int d, DataInput in) throws IOException {
        int h = in.readInt();
        int w = in.readInt();
        if (d <= 0 || h <= 0 || w <= 0 || (long) d * h * w * Float.BYTES > Integer.MAX_VALUE) {
            throw new IOException("corrupt patch shape " + d + "x" + h + "x" + w);
        }
        return new Shape3(d, h, w);
    }

    /** Reads a written patch's target length (after its shape), failing on a corrupt one. */
    public static int readLabelLength(DataInput in, Shape3 shape) throws IOException {
        int n = in.readInt();
        if (n <= 0 || (n != shape.voxels() && n > MAX_SPARSE_LABEL)) {
            throw new IOException("corrupt patch target of " + n + " bytes for " + shape);
        }
        return n;
    }
}
