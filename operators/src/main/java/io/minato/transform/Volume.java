package io.minato.transform;

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

    public Volume(String name, Shape3 shape, FloatBuffer image, ByteBuffer label) {
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
}
