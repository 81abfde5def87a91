package io.minato.sample.serde;

import io.minato.sample.PreparedSample;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Writes a {@link PreparedSample} as its identity only (task, path, CPU nanoseconds, device), never
 * its 1-10 MiB patch: for checkpointed state, since a sample is a pure function of its task and is
 * prepared again after a restore. Reads every form {@link PreparedSampleSerializer} writes.
 */
public final class PreparedSampleIdentitySerializer extends SampleSerializer<PreparedSample> {
    private static final long serialVersionUID = 1L;

    public static final PreparedSampleIdentitySerializer INSTANCE =
            new PreparedSampleIdentitySerializer();

    private static final PreparedSampleSerializer SAMPLE = PreparedSampleSerializer.INSTANCE;

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public PreparedSample createInstance() {
        return SAMPLE.createInstance();
    }

    @Override
    public PreparedSample copy(PreparedSample from) {
        return SAMPLE.copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(PreparedSample sample, DataOutputView out) throws IOException {
        PreparedSampleSerializer.serializeIdentity(sample, out);
    }

    @Override
    public PreparedSample deserialize(DataInputView in) throws IOException {
        return SAMPLE.deserialize(in);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        SAMPLE.copy(in, out);
    }

    @Override
    public TypeSerializerSnapshot<PreparedSample> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<PreparedSample> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
