package io.minato.sample.serde;

import io.minato.sample.SampleTask;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/** Serializes a {@link SampleTask} as four fixed-width fields, 24 bytes. */
public final class SampleTaskSerializer extends SampleSerializer<SampleTask> {
    private static final long serialVersionUID = 1L;

    public static final SampleTaskSerializer INSTANCE = new SampleTaskSerializer();

    private static final int LENGTH = Long.BYTES + Integer.BYTES + Long.BYTES + Integer.BYTES;

    private static final SampleTask EMPTY = new SampleTask(0, 0, 0, 0);

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public SampleTask createInstance() {
        return EMPTY;
    }

    @Override
    public SampleTask copy(SampleTask from) {
        return from;
    }

    @Override
    public int getLength() {
        return LENGTH;
    }

    @Override
    public void serialize(SampleTask task, DataOutputView out) throws IOException {
        out.writeLong(task.seed());
        out.writeInt(task.epoch());
        out.writeLong(task.index());
        out.writeInt(task.caseIndex());
    }

    @Override
    public SampleTask deserialize(DataInputView in) throws IOException {
        return new SampleTask(in.readLong(), in.readInt(), in.readLong(), in.readInt());
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        out.writeLong(in.readLong());
        out.writeInt(in.readInt());
        out.writeLong(in.readLong());
        out.writeInt(in.readInt());
    }

    @Override
    public TypeSerializerSnapshot<SampleTask> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; the format has no parameters. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<SampleTask> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
