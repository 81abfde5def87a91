package io.minato.npy;

import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/** The parsed header of a {@code .npy} file: element type, byte order, layout and shape. */
public final class NpyHeader {

    private final DType dtype;
    private final ByteOrder order;
    private final boolean fortranOrder;
    private final long[] shape;
    private final int version;
    private final long dataOffset;
    private final long elementCount;

    /** Callers have already checked the shape: non-negative and its byte count fits a long. */
    NpyHeader(
            DType dtype,
            ByteOrder order,
            boolean fortranOrder,
            long[] shape,
            int version,
            long dataOffset) {
        this.dtype = Objects.requireNonNull(dtype);
        this.order = Objects.requireNonNull(order);
        this.fortranOrder = fortranOrder;
        this.shape = shape.clone();
        this.version = version;
        this.dataOffset = dataOffset;
        if (NpyReader.dataBytes(shape, dtype) < 0) {
            throw new IllegalArgumentException("byte count of shape overflows a long");
        }
        long count = 1;
        for (long d : shape) {
            count *= d;
        }
        this.elementCount = count;
    }

    public DType dtype() {
        return dtype;
    }

    /** Byte order of the data; little-endian for one-byte types, where it does not matter. */
    public ByteOrder order() {
        return order;
    }

    /** True when the data is laid out column-major (first index varies fastest). */
    public boolean fortranOrder() {
        return fortranOrder;
    }

    public long[] shape() {
        return shape.clone();
    }

    /** The format's major version: 1, 2 or 3. */
    public int version() {
        return version;
    }

    /** Where the data starts in the file. */
    public long dataOffset() {
        return dataOffset;
    }

    /** The product of the shape; 1 for a 0-d array. */
    public long elementCount() {
        return elementCount;
    }

    public long dataBytes() {
        return elementCount * dtype.size();
    }

    /** The {@code descr} as NumPy writes it, e.g. {@code "<f4"} or {@code "|u1"}. */
    public String descr() {
        return descr(dtype, order);
    }

    static String descr(DType dtype, ByteOrder order) {
        char prefix = dtype.size() == 1 ? '|' : order == ByteOrder.BIG_ENDIAN ? '>' : '<';
        return prefix + dtype.code();
    }

    /** The shape as Python writes a tuple: {@code ()}, {@code (5,)}, {@code (1, 2, 3)}. */
    static String shapeString(long[] shape) {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < shape.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(shape[i]);
        }
        return sb.append(shape.length == 1 ? ",)" : ")").toString();
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof NpyHeader)) {
            return false;
        }
        NpyHeader h = (NpyHeader) o;
        return dtype == h.dtype
                && order.equals(h.order)
                && fortranOrder == h.fortranOrder
                && Arrays.equals(shape, h.shape)
                && version == h.version
                && dataOffset == h.dataOffset;
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                dtype, order, fortranOrder, Arrays.hashCode(shape), version, dataOffset);
    }

    @Override
    public String toString() {
        return "NpyHeader{descr='"
                + descr()
                + "', fortran_order="
                + (fortranOrder ? "True" : "False")
                + ", shape="
                + shapeString(shape)
                + ", version="
                + version
                + ".0, dataOffset="
                + dataOffset
                + "}";
    }
}
