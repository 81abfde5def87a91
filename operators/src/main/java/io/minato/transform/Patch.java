package io.minato.transform;

import java.util.Arrays;

/** A prepared training sample: image (float32) and label (uint8) patches, C order. */
public final class Patch {
    private final Shape3 shape;
    private final float[] image;
    private final byte[] label;

    public Patch(Shape3 shape, float[] image, byte[] label) {
        if (image.length != shape.voxels() || label.length != shape.voxels()) {
            throw new IllegalArgumentException("patch arrays do not match " + shape);
        }
        this.shape = shape;
        this.image = image;
        this.label = label;
    }

    public Shape3 shape() {
        return shape;
    }

    /** The image voxels; transforms update them in place. */
    public float[] image() {
        return image;
    }

    /** The label voxels; transforms update them in place. */
    public byte[] label() {
        return label;
    }

    /** Bytes its arrays occupy: float32 image and uint8 label. */
    public long bytes() {
        return 5 * shape.voxels();
    }

    public boolean sameContent(Patch other) {
        return shape.equals(other.shape)
                && Arrays.equals(image, other.image)
                && Arrays.equals(label, other.label);
    }
}
