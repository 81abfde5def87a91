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
 */
public final class Patch {
    /** Bytes {@link #writeTo} writes before the arrays: the shape and the target's length. */
    public static final int HEADER_BYTES = 4 * Integer.BYTES;

    /** Bytes of a class-index target. */
    public static final int CLASS_BYTES = Integer.BYTES;

    private final Shape3 shape;
    private final float[] image;
    private final byte[] label;

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
    }

    /** A sample whose target is one class index. */
    public static Patch ofClass(Shape3 shape, float[] image, int cls) {
        Patch p = new Patch(shape, image, new byte[CLASS_BYTES]);
        p.setClassIndex(cls);
        return p;
    }

    public Shape3 shape() {
        return shape;
    }

    /** The input values; transforms update them in place. */
    public float[] image() {
        return image;
    }

    /** The target's bytes; transforms update them in place. */
    public byte[] label() {
        return label;
    }

    /** Whether the target holds one class per input element (a segmentation label). */
    public boolean denseLabel() {
        return label.length == shape.voxels();
    }

    /** The class index of a classification target. */
    public int classIndex() {
        if (label.length != CLASS_BYTES || denseLabel()) {
            throw new IllegalStateException("the patch's target is not a class index");
        }
        return (label[0] & 0xFF)
                | (label[1] & 0xFF) << 8
                | (label[2] & 0xFF) << 16
                | (label[3] & 0xFF) << 24;
    }

    /** Sets a classification target (the arrays may be recycled ones). */
    public void setClassIndex(int cls) {
        if (label.length != CLASS_BYTES) {
            throw new IllegalStateException("the patch's target is not a class index");
        }
        label[0] = (byte) cls;
        label[1] = (byte) (cls >>> 8);
        label[2] = (byte) (cls >>> 16);
        label[3] = (byte) (cls >>> 24);
    }

    /** Bytes its arrays occupy: float32 input and the target. */
    public long bytes() {
        return (long) Float.BYTES * shape.voxels() + label.length;
    }

    public boolean sameContent(Patch other) {
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
     * the target's bytes.
     */
    public void writeTo(DataOutput out) throws IOException {
        out.writeInt(shape.d());
        out.writeInt(shape.h());
        out.writeInt(shape.w());
        out.writeInt(label.length);
        FloatIo.write(image, out);
        out.write(label);
    }

    /** Bytes {@link #writeTo} writes. */
    public long serializedBytes() {
        return HEADER_BYTES + bytes();
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
        Shape3 shape = readShape(in);
        int labelBytes = readLabelLength(in, shape);
        float[] image = new float[(int) shape.voxels()];
        FloatIo.readFully(in, image);
        byte[] label = new byte[labelBytes];
        in.readFully(label);
        return new Patch(shape, image, label);
    }

    /** Reads a written patch's shape, failing on one no patch can have. */
    public static Shape3 readShape(DataInput in) throws IOException {
        int d = in.readInt();
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
