package io.minato.npy;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A read-only, zero-copy view of a memory-mapped {@code .npy} file's data; safe to read from many
 * threads, since every accessor returns its own buffer or reads at an absolute index.
 */
public final class NpyArray {

    private final Path path;
    private final NpyHeader header;
    private final DType dtype;
    private final long[] shape;
    private final long[] strides;

    /** Read-only, in the file's byte order; only absolute reads touch it, so it is shared. */
    private final ByteBuffer data;

    NpyArray(Path path, NpyHeader header, ByteBuffer mapped) {
        this.path = path;
        this.header = header;
        this.dtype = header.dtype();
        this.shape = header.shape();
        this.strides = strides(shape, header.fortranOrder());
        this.data = mapped.asReadOnlyBuffer().order(header.order());
    }

    /** Element strides of the storage order, so that F-order files index like C-order ones. */
    private static long[] strides(long[] shape, boolean fortranOrder) {
        long[] strides = new long[shape.length];
        long stride = 1;
        for (int k = 0; k < shape.length; k++) {
            int axis = fortranOrder ? k : shape.length - 1 - k;
            strides[axis] = stride;
            stride *= shape[axis];
        }
        return strides;
    }

    public Path path() {
        return path;
    }

    public NpyHeader header() {
        return header;
    }

    public DType dtype() {
        return dtype;
    }

    public long[] shape() {
        return shape.clone();
    }

    /** Number of elements. */
    public long size() {
        return header.elementCount();
    }

    /** The raw data: a fresh read-only buffer at position 0, in the file's byte order. */
    public ByteBuffer buffer() {
        return data.duplicate().order(data.order());
    }

    public FloatBuffer floats() {
        return buffer(DType.FLOAT32).asFloatBuffer();
    }

    public DoubleBuffer doubles() {
        return buffer(DType.FLOAT64).asDoubleBuffer();
    }

    /** For {@code i2} and {@code u2}; mask with 0xFFFF to read {@code u2} unsigned. */
    public ShortBuffer shorts() {
        return buffer(DType.INT16, DType.UINT16).asShortBuffer();
    }

    /** For {@code i4} and {@code u4}; use {@link Integer#toUnsignedLong} for {@code u4}. */
    public IntBuffer ints() {
        return buffer(DType.INT32, DType.UINT32).asIntBuffer();
    }

    /** For {@code i8} and {@code u8}. */
    public LongBuffer longs() {
        return buffer(DType.INT64, DType.UINT64).asLongBuffer();
    }

    /** For {@code u1}, {@code i1} and {@code b1}. */
    public ByteBuffer bytes() {
        return buffer(DType.UINT8, DType.INT8, DType.BOOL);
    }

    /**
     * The element at a storage index (see {@link #flatIndex}) as a double, whatever the dtype:
     * unsigned types read unsigned, bool as 0 or 1.
     */
    public double getDouble(long flatIndex) {
        if (flatIndex < 0 || flatIndex >= size()) {
            throw new IndexOutOfBoundsException(
                    NpyFormatException.oneLine(
                            path + ": index " + flatIndex + " outside 0.." + (size() - 1)));
        }
        // The mapping is at most 2 GiB - 1 bytes, so the byte offset fits an int.
        int at = (int) (flatIndex * dtype.size());
        switch (dtype) {
            case BOOL:
                return data.get(at) != 0 ? 1 : 0;
            case INT8:
                return data.get(at);
            case UINT8:
                return data.get(at) & 0xFF;
            case INT16:
                return data.getShort(at);
            case UINT16:
                return data.getShort(at) & 0xFFFF;
            case INT32:
                return data.getInt(at);
            case UINT32:
                return Integer.toUnsignedLong(data.getInt(at));
            case INT64:
                return data.getLong(at);
            case UINT64:
                return unsignedToDouble(data.getLong(at));
            case FLOAT16:
                return halfToFloat(data.getShort(at));
            case FLOAT32:
                return data.getFloat(at);
            case FLOAT64:
                return data.getDouble(at);
            default:
                throw new AssertionError(dtype);
        }
    }

    /**
     * Where element {@code a[idx]} lies in the data, counted in elements; honours the file's C or
     * Fortran order.
     */
    public long flatIndex(long... idx) {
        if (idx.length != shape.length) {
            throw new IllegalArgumentException(
                    NpyFormatException.oneLine(
                            path
                                    + ": "
                                    + idx.length
                                    + " indices given for an array of shape "
                                    + NpyHeader.shapeString(shape)));
        }
        long flat = 0;
        for (int k = 0; k < idx.length; k++) {
            if (idx[k] < 0 || idx[k] >= shape[k]) {
                throw new IndexOutOfBoundsException(
                        NpyFormatException.oneLine(
                                path
                                        + ": index "
                                        + Arrays.toString(idx)
                                        + " outside shape "
                                        + NpyHeader.shapeString(shape)));
            }
            flat += idx[k] * strides[k];
        }
        return flat;
    }

    private ByteBuffer buffer(DType... accepted) {
        for (DType t : accepted) {
            if (t == dtype) {
                return buffer();
            }
        }
        throw new IllegalStateException(
                NpyFormatException.oneLine(
                        path
                                + ": holds '"
                                + header.descr()
                                + "' data, not "
                                + codes(accepted)
                                + "; use "
                                + viewFor(dtype)
                                + " or getDouble()"));
    }

    private static String codes(DType... types) {
        StringBuilder sb = new StringBuilder();
        for (DType t : types) {
            sb.append(sb.length() == 0 ? "" : "/").append(t.code());
        }
        return sb.toString();
    }

    private static String viewFor(DType t) {
        switch (t) {
            case FLOAT32:
                return "floats()";
            case FLOAT64:
                return "doubles()";
            case INT16:
            case UINT16:
            case FLOAT16:
                return "shorts()";
            case INT32:
            case UINT32:
                return "ints()";
            case INT64:
            case UINT64:
                return "longs()";
            default:
                return "bytes()";
        }
    }

    /** Java has no unsigned long to double conversion. */
    private static double unsignedToDouble(long v) {
        if (v >= 0) {
            return v;
        }
        // Halve keeping the low bit (sticky) so the final rounding matches the exact value.
        return ((v >>> 1) | (v & 1)) * 2.0;
    }

    /** IEEE 754 binary16 to float; {@code Float.float16ToFloat} only exists from Java 20. */
    static float halfToFloat(short half) {
        int bits = half & 0xFFFF;
        int sign = (bits & 0x8000) << 16;
        int exponent = (bits >>> 10) & 0x1F;
        int mantissa = bits & 0x3FF;
        if (exponent == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (mantissa << 13));
        }
        if (exponent == 0) {
            // Zero or subnormal: mantissa x 2^-24, exact in a float.
            float magnitude = mantissa * 0x1p-24f;
            return sign == 0 ? magnitude : -magnitude;
        }
        return Float.intBitsToFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
    }

    @Override
    public String toString() {
        return "NpyArray{" + path + ", " + header + "}";
    }
}
