package io.minato.sample.serde;

import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/** Serializes a {@link PreparedSample}: task, path, CPU nanoseconds, then the patch. */
public final class PreparedSampleSerializer extends TypeSerializerSingleton<PreparedSample> {
    private static final long serialVersionUID = 1L;

    public static final PreparedSampleSerializer INSTANCE = new PreparedSampleSerializer();

    private static final SampleTaskSerializer TASK = SampleTaskSerializer.INSTANCE;
    private static final SamplePathSerializer PATH = SamplePathSerializer.INSTANCE;
    private static final PatchSerializer PATCH = PatchSerializer.INSTANCE;

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public PreparedSample createInstance() {
        return new PreparedSample(
                TASK.createInstance(), PATH.createInstance(), 0, PATCH.createInstance());
    }

    /** Copies the patch arrays; the record itself is immutable. */
    @Override
    public PreparedSample copy(PreparedSample from) {
        return new PreparedSample(
                from.task(), from.path(), from.prepCpuNanos(), PATCH.copy(from.patch()));
    }

    @Override
    public PreparedSample copy(PreparedSample from, PreparedSample reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(PreparedSample sample, DataOutputView out) throws IOException {
        TASK.serialize(sample.task(), out);
        PATH.serialize(sample.path(), out);
        out.writeLong(sample.prepCpuNanos());
        PATCH.serialize(sample.patch(), out);
    }

    @Override
    public PreparedSample deserialize(DataInputView in) throws IOException {
        SampleTask task = TASK.deserialize(in);
        SamplePath path = PATH.deserialize(in);
        long prepCpuNanos = in.readLong();
        return new PreparedSample(task, path, prepCpuNanos, PATCH.deserialize(in));
    }

    @Override
    public PreparedSample deserialize(PreparedSample reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        TASK.copy(in, out);
        PATH.copy(in, out);
        out.writeLong(in.readLong());
        PATCH.copy(in, out);
    }

    @Override
    public TypeSerializerSnapshot<PreparedSample> snapshotConfiguration() {
        return new Snapshot();
    }

    /**
     * Restores {@link #INSTANCE}. The nested serializers have no parameters either; a change to
     * their format is a change to this one.
     */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<PreparedSample> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
