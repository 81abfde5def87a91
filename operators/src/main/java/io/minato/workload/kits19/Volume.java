package io.minato.workload.kits19;

import io.minato.spi.Shape3;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Objects;

/**
 * One case's image (float32) and label (uint8) volumes, C order, usually memory mapped. Only
 * absolute reads are used, so one instance may be shared by threads.
 */
public final class Volume {
    private final String name;
    private final Shape3 shape;
    private final FloatBuffer image;
    private final ByteBuffer label;
    private final CaseMemo memo;

    public Volume(String name, Shape3 shape, FloatBuffer image, ByteBuffer label) {
        this(name, shape, image, label, CaseMemo.NONE);
    }

    /**
     * @param memo what preparations may remember about this case (see {@link CaseMemo})
     */
    public Volume(String name, Shape3 shape, FloatBuffer image, ByteBuffer label, CaseMemo memo) {
        this.name = Objects.requireNonNull(name);
        this.shape = Objects.requireNonNull(shape);
        if (image.limit() != shape.voxels() || label.limit() != shape.voxels()) {
            throw new IllegalArgumentException(
                    name
                            + ": image holds "
                            + image.limit()
                            + " and label "
                            + label.limit()
                            + " voxels, the shape "
                            + shape
                            + " needs "
                            + shape.voxels());
        }
        this.image = image;
        this.label = label;
        this.memo = Objects.requireNonNull(memo);
    }

    /** For tests and in-memory data. */
    public static Volume of(String name, Shape3 shape, float[] image, byte[] label) {
        return new Volume(name, shape, FloatBuffer.wrap(image), ByteBuffer.wrap(label));
    }

    public String name() {
        return name;
    }

    public Shape3 shape() {
        return shape;
    }

    public FloatBuffer image() {
        return image;
    }

    public ByteBuffer label() {
        return label;
    }

    /** What preparations remember about this case. */
    public CaseMemo memo() {
        return memo;
    }

    /** The same volumes with another memo. */
    public Volume withMemo(CaseMemo m) {
        return new Volume(name, shape, image, label, m);
    }
}
