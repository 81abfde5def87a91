package io.minato.sample.serde;

import io.minato.sample.SamplePath;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link SamplePath} as one byte, its ordinal. New constants go at the end so that
 * stored ordinals keep their meaning.
 */
public final class SamplePathSerializer extends SampleSerializer<SamplePath> {
    private static final long serialVersionUID = 1L;

    public static final SamplePathSerializer INSTANCE = new SamplePathSerializer();

    private static final SamplePath[] VALUES = SamplePath.values();

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public SamplePath createInstance() {
        return SamplePath.FAST;
    }

    @Override
    public SamplePath copy(SamplePath from) {
        return from;
    }

    @Override
    public int getLength() {
        return 1;
    }

    @Override
    public void serialize(SamplePath path, DataOutputView out) throws IOException {
        out.writeByte(path.ordinal());
    }

    @Override
    public SamplePath deserialize(DataInputView in) throws IOException {
        int ordinal = in.readUnsignedByte();
        if (ordinal >= VALUES.length) {
            throw new IOException("unknown sample path ordinal " + ordinal);
        }
        return VALUES[ordinal];
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        out.writeByte(in.readByte());
    }

    @Override
    public TypeSerializerSnapshot<SamplePath> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; the format has no parameters. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<SamplePath> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
