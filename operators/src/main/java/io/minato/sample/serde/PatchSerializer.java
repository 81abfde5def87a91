package io.minato.sample.serde;

import io.minato.transform.FloatIo;
import io.minato.transform.Patch;
import io.minato.transform.Shape3;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link Patch}: the shape (three ints), the image as little-endian float32 and the
 * label as uint8, both C order, the same layout as a crop inside a serialized preparation.
 */
public final class PatchSerializer extends TypeSerializerSingleton<Patch> {
    private static final long serialVersionUID = 1L;

    public static final PatchSerializer INSTANCE = new PatchSerializer();

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public Patch createInstance() {
        return new Patch(Shape3.cube(1), new float[1], new byte[1]);
    }

    /** A deep copy: transforms and trainers may write into the arrays in place. */
    @Override
    public Patch copy(Patch from) {
        return new Patch(from.shape(), from.image().clone(), from.label().clone());
    }

    @Override
    public Patch copy(Patch from, Patch reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Patch patch, DataOutputView out) throws IOException {
        Shape3 s = patch.shape();
        out.writeInt(s.d());
        out.writeInt(s.h());
        out.writeInt(s.w());
        FloatIo.write(patch.image(), out);
        out.write(patch.label());
    }

    @Override
    public Patch deserialize(DataInputView in) throws IOException {
        Shape3 shape = readShape(in);
        int voxels = (int) shape.voxels();
        float[] image = new float[voxels];
        FloatIo.readFully(in, image);
        byte[] label = new byte[voxels];
        in.readFully(label);
        return new Patch(shape, image, label);
    }

    /** Always a fresh patch: a reused one may still be referenced by a batch being assembled. */
    @Override
    public Patch deserialize(Patch reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    /** Streams the voxel bytes through without building arrays. */
    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        Shape3 shape = readShape(in);
        out.writeInt(shape.d());
        out.writeInt(shape.h());
        out.writeInt(shape.w());
        BulkIo.copy(in, out, shape.voxels() * (Float.BYTES + 1));
    }

    private static Shape3 readShape(DataInputView in) throws IOException {
        int d = in.readInt();
        int h = in.readInt();
        int w = in.readInt();
        if (d <= 0 || h <= 0 || w <= 0 || (long) d * h * w * Float.BYTES > Integer.MAX_VALUE) {
            throw new IOException("corrupt patch shape " + d + "x" + h + "x" + w);
        }
        return new Shape3(d, h, w);
    }

    @Override
    public TypeSerializerSnapshot<Patch> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; the format has no parameters. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Patch> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
