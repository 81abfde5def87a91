package io.minato.sample.serde;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.transform.Patch;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link PreparedSample} as it crosses an operator boundary: task, path, CPU
 * nanoseconds, device, then the patch in one of three forms, marked by a byte:
 *
 * <ul>
 *   <li>{@code HANDED_OFF}: the patch was parked in this JVM's {@link SampleHandoff}; the receiver,
 *       which runs in the same TaskManager ({@link PreparedSample#handOff}), takes it from there
 *       (no copy of the bytes);
 *   <li>{@code INLINE}: the bytes follow (a receiver elsewhere, or the handoff was full);
 *   <li>{@code IDENTITY}: no bytes at all; the sample is a pure function of its task and is
 *       prepared again where it is needed ({@link PreparedSampleIdentitySerializer} writes only
 *       this form, for checkpoints).
 * </ul>
 *
 * A handed-off sample whose patch is not found (a replay after a restore) is read as an identity:
 * its {@link PreparedSample#patch()} is null until it is prepared again.
 */
public final class PreparedSampleSerializer extends TypeSerializerSingleton<PreparedSample> {
    private static final long serialVersionUID = 1L;

    public static final PreparedSampleSerializer INSTANCE = new PreparedSampleSerializer();

    private static final SampleTaskSerializer TASK = SampleTaskSerializer.INSTANCE;
    private static final SamplePathSerializer PATH = SamplePathSerializer.INSTANCE;
    private static final PatchSerializer PATCH = PatchSerializer.INSTANCE;

    static final int INLINE = 0;
    static final int HANDED_OFF = 1;
    static final int IDENTITY = 2;

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public PreparedSample createInstance() {
        return new PreparedSample(
                TASK.createInstance(),
                PATH.createInstance(),
                0,
                PATCH.createInstance(),
                PreparedSample.ANY_DEVICE);
    }

    /** Copies the patch arrays; the record itself is immutable. */
    @Override
    public PreparedSample copy(PreparedSample from) {
        return from.withPatch(from.patch() == null ? null : PATCH.copy(from.patch()));
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
        writeHeader(sample, out);
        Patch patch = sample.patch();
        if (patch == null) {
            out.writeByte(IDENTITY);
        } else if (sample.handOff() && SampleHandoff.jvm().offer(sample.task(), patch)) {
            out.writeByte(HANDED_OFF);
        } else {
            out.writeByte(INLINE);
            PATCH.serialize(patch, out);
        }
    }

    /** The sample without its bytes: what a checkpoint keeps. */
    static void serializeIdentity(PreparedSample sample, DataOutputView out) throws IOException {
        writeHeader(sample, out);
        out.writeByte(IDENTITY);
    }

    private static void writeHeader(PreparedSample sample, DataOutputView out) throws IOException {
        TASK.serialize(sample.task(), out);
        PATH.serialize(sample.path(), out);
        out.writeLong(sample.prepCpuNanos());
        out.writeInt(sample.device());
    }

    @Override
    public PreparedSample deserialize(DataInputView in) throws IOException {
        SampleTask task = TASK.deserialize(in);
        SamplePath path = PATH.deserialize(in);
        long prepCpuNanos = in.readLong();
        int device = in.readInt();
        int form = in.readUnsignedByte();
        Patch patch =
                switch (form) {
                    case INLINE -> PATCH.deserialize(in);
                    case HANDED_OFF -> SampleHandoff.jvm().take(task);
                    case IDENTITY -> null;
                    default -> throw new IOException("unknown prepared sample form " + form);
                };
        return new PreparedSample(task, path, prepCpuNanos, patch, device);
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
        out.writeInt(in.readInt());
        int form = in.readUnsignedByte();
        out.writeByte(form);
        if (form == INLINE) {
            PATCH.copy(in, out);
        }
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
