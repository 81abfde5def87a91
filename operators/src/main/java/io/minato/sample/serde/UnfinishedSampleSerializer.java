package io.minato.sample.serde;

import io.minato.sample.SampleHandoff;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.transform.Preparation;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes an {@link UnfinishedSample}: task, CPU nanoseconds, then the preparation state in one
 * of two forms, marked by a byte: {@code HANDED_OFF}, parked in this JVM's {@link SampleHandoff}
 * (the cropped patch is not copied), or {@code INLINE}, the state's bytes. A handed-off state that
 * is not found (another JVM, a replay after a restore) is prepared again from the start: a sample
 * is a pure function of its task, so the result is the same.
 */
public final class UnfinishedSampleSerializer extends TypeSerializerSingleton<UnfinishedSample> {
    private static final long serialVersionUID = 1L;

    public static final UnfinishedSampleSerializer INSTANCE = new UnfinishedSampleSerializer();

    private static final SampleTaskSerializer TASK = SampleTaskSerializer.INSTANCE;
    private static final PreparationSerializer PREPARATION = PreparationSerializer.INSTANCE;

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public UnfinishedSample createInstance() {
        return new UnfinishedSample(TASK.createInstance(), PREPARATION.createInstance(), 0);
    }

    /** Copies the preparation, which the slow path advances in place. */
    @Override
    public UnfinishedSample copy(UnfinishedSample from) {
        return new UnfinishedSample(
                from.task(), PREPARATION.copy(from.preparation()), from.prepCpuNanos());
    }

    @Override
    public UnfinishedSample copy(UnfinishedSample from, UnfinishedSample reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    static final int INLINE = 0;
    static final int HANDED_OFF = 1;

    @Override
    public void serialize(UnfinishedSample sample, DataOutputView out) throws IOException {
        TASK.serialize(sample.task(), out);
        out.writeLong(sample.prepCpuNanos());
        if (SampleHandoff.jvm().offer(sample.task(), sample.preparation())) {
            out.writeByte(HANDED_OFF);
        } else {
            out.writeByte(INLINE);
            PREPARATION.serialize(sample.preparation(), out);
        }
    }

    @Override
    public UnfinishedSample deserialize(DataInputView in) throws IOException {
        SampleTask task = TASK.deserialize(in);
        long prepCpuNanos = in.readLong();
        int form = in.readUnsignedByte();
        Preparation preparation =
                switch (form) {
                    case INLINE -> PREPARATION.deserialize(in);
                    case HANDED_OFF -> {
                        Preparation parked = SampleHandoff.jvm().takeUnfinished(task);
                        yield parked != null ? parked : Preparation.start(task.key());
                    }
                    default -> throw new IOException("unknown unfinished sample form " + form);
                };
        return new UnfinishedSample(task, preparation, prepCpuNanos);
    }

    @Override
    public UnfinishedSample deserialize(UnfinishedSample reuse, DataInputView in)
            throws IOException {
        return deserialize(in);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        TASK.copy(in, out);
        out.writeLong(in.readLong());
        int form = in.readUnsignedByte();
        out.writeByte(form);
        if (form == INLINE) {
            PREPARATION.copy(in, out);
        }
    }

    @Override
    public TypeSerializerSnapshot<UnfinishedSample> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; a change to a nested format is a change to this one. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<UnfinishedSample> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
