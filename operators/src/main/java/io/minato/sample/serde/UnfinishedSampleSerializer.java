package io.minato.sample.serde;

import io.minato.sample.SampleHandoff;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes an {@link UnfinishedSample}: task, CPU nanoseconds, then where to resume in one of
 * three forms, marked by a byte: {@code HANDED_OFF}, the preparation parked in this JVM's {@link
 * SampleHandoff} (what it cut so far is not copied); {@code INLINE}, the state's bytes, which the
 * slow worker reads with its workload's transforms; {@code START_OVER}, nothing. A handed-off state
 * that is not found (another JVM, a replay after a restore) starts over: a sample is a pure
 * function of its task, so the result is the same.
 */
public final class UnfinishedSampleSerializer extends SampleSerializer<UnfinishedSample> {
    private static final long serialVersionUID = 1L;

    public static final UnfinishedSampleSerializer INSTANCE = new UnfinishedSampleSerializer();

    private static final SampleTaskSerializer TASK = SampleTaskSerializer.INSTANCE;

    /** Larger states are corrupt: a preparation's state is its cut so far, at most a patch. */
    private static final int MAX_STATE_BYTES = Integer.MAX_VALUE - 16;

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public UnfinishedSample createInstance() {
        return new UnfinishedSample(TASK.createInstance(), null, 0);
    }

    /**
     * A copy that resumes from the state's bytes: the slow path advances a preparation in place.
     */
    @Override
    public UnfinishedSample copy(UnfinishedSample from) {
        return from.detached();
    }

    @Override
    public int getLength() {
        return -1;
    }

    static final int INLINE = 0;
    static final int HANDED_OFF = 1;
    static final int START_OVER = 2;

    @Override
    public void serialize(UnfinishedSample sample, DataOutputView out) throws IOException {
        TASK.serialize(sample.task(), out);
        out.writeLong(sample.prepCpuNanos());
        if (sample.steps() != null && SampleHandoff.jvm().offer(sample.task(), sample.steps())) {
            out.writeByte(HANDED_OFF);
            return;
        }
        byte[] state =
                sample.steps() != null ? UnfinishedSample.bytesOf(sample.steps()) : sample.state();
        if (state == null) {
            out.writeByte(START_OVER);
        } else {
            out.writeByte(INLINE);
            out.writeInt(state.length);
            out.write(state);
        }
    }

    @Override
    public UnfinishedSample deserialize(DataInputView in) throws IOException {
        SampleTask task = TASK.deserialize(in);
        long prepCpuNanos = in.readLong();
        int form = in.readUnsignedByte();
        return switch (form) {
            case INLINE -> new UnfinishedSample(task, readState(in), prepCpuNanos);
            case HANDED_OFF ->
                    new UnfinishedSample(
                            task,
                            SampleHandoff.jvm().takeUnfinished(task),
                            prepCpuNanos,
                            UnfinishedSample.ANY_SLOW_WORKER);
            case START_OVER -> new UnfinishedSample(task, null, prepCpuNanos);
            default -> throw new IOException("unknown unfinished sample form " + form);
        };
    }

    private static byte[] readState(DataInputView in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_STATE_BYTES) {
            throw new IOException("corrupt unfinished sample state of " + n + " bytes");
        }
        byte[] state = new byte[n];
        in.readFully(state);
        return state;
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        TASK.copy(in, out);
        out.writeLong(in.readLong());
        int form = in.readUnsignedByte();
        out.writeByte(form);
        if (form == INLINE) {
            int n = in.readInt();
            if (n < 0 || n > MAX_STATE_BYTES) {
                throw new IOException("corrupt unfinished sample state of " + n + " bytes");
            }
            out.writeInt(n);
            BulkIo.copy(in, out, n);
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
