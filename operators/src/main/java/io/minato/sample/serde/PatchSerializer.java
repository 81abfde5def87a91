package io.minato.sample.serde;

import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link Patch} in its own layout ({@link Patch#writeTo}), the same as a crop inside a
 * serialized preparation.
 */
public final class PatchSerializer extends SampleSerializer<Patch> {
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
        return from.copy();
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Patch patch, DataOutputView out) throws IOException {
        patch.writeTo(out);
    }

    @Override
    public Patch deserialize(DataInputView in) throws IOException {
        return Patch.readFrom(in);
    }

    /** Streams the input and target bytes through without building arrays. */
    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        int first = in.readInt();
        if (Patch.marksShared(first)) {
            Patch.readShared(in).writeTo(out); // a shared sample's handle: a few hundred bytes
            return;
        }
        Shape3 shape = Patch.readShape(first, in);
        int labelBytes = Patch.readLabelLength(in, shape);
        out.writeInt(shape.d());
        out.writeInt(shape.h());
        out.writeInt(shape.w());
        out.writeInt(labelBytes);
        BulkIo.copy(in, out, shape.voxels() * Float.BYTES + labelBytes);
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
