package io.minato.sample.serde;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link PreparedSample} as it crosses an operator boundary: task, path, CPU
 * nanoseconds, device, then the patch in one of four forms, marked by a byte:
 *
 * <ul>
 *   <li>{@code HANDED_OFF}: the patch was parked in this JVM's {@link SampleHandoff}; the receiver,
 *       which runs in the same TaskManager ({@link PreparedSample#handOff}), takes it from there
 *       (no copy of the bytes);
 *   <li>{@code INLINE}: the bytes follow (a receiver elsewhere, or the handoff was full);
 *   <li>{@code IDENTITY}: no bytes at all; the sample is a pure function of its task and is
 *       prepared again where it is needed ({@link PreparedSampleIdentitySerializer} writes only
 *       this form, for checkpoints);
 *   <li>{@code PIECE}: one {@link PreparedSample.Piece} of a large sample's serialized patch: its
 *       index, the count of pieces, the length, then the raw bytes. The receiver puts the patch
 *       together; a sample is sent so when one record would pass Flink's spilling threshold.
 * </ul>
 *
 * A handed-off sample whose patch is not found (a replay after a restore) is read as an identity:
 * its {@link PreparedSample#patch()} is null until it is prepared again.
 */
public final class PreparedSampleSerializer extends SampleSerializer<PreparedSample> {
    private static final long serialVersionUID = 1L;

    public static final PreparedSampleSerializer INSTANCE = new PreparedSampleSerializer();

    private static final SampleTaskSerializer TASK = SampleTaskSerializer.INSTANCE;
    private static final SamplePathSerializer PATH = SamplePathSerializer.INSTANCE;
    private static final PatchSerializer PATCH = PatchSerializer.INSTANCE;

    static final int INLINE = 0;
    static final int HANDED_OFF = 1;
    static final int IDENTITY = 2;
    static final int PIECE = 3;

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

    /**
     * Copies the patch arrays (or a piece's range of bytes, into an array of its own); the record
     * itself is immutable.
     */
    @Override
    public PreparedSample copy(PreparedSample from) {
        PreparedSample.Piece p = from.piece();
        if (p != null) {
            return from.asPiece(p.copy());
        }
        return from.withPatch(from.patch() == null ? null : PATCH.copy(from.patch()));
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(PreparedSample sample, DataOutputView out) throws IOException {
        writeHeader(sample, out);
        Patch patch = sample.patch();
        PreparedSample.Piece piece = sample.piece();
        if (piece != null) {
            out.writeByte(PIECE);
            out.writeInt(piece.index());
            out.writeInt(piece.count());
            out.writeInt(piece.length());
            piece.writeTo(out);
        } else if (patch == null) {
            out.writeByte(IDENTITY);
        } else if (sample.handOff() && SampleHandoff.jvm().offer(sample.task(), patch)) {
            out.writeByte(HANDED_OFF);
        } else {
            out.writeByte(INLINE);
            PATCH.serialize(patch, out);
        }
    }

    /** The sample without its bytes (a piece as its whole sample): what a checkpoint keeps. */
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
        if (form == PIECE) {
            int index = in.readInt();
            int count = in.readInt();
            int length = pieceLength(in.readInt());
            // The receiver gives it back once it has read the sample: no 4 MiB array to allocate
            // and zero per piece.
            byte[] bytes = PatchPool.jvm().takeBytes(length);
            in.readFully(bytes, 0, length);
            return new PreparedSample(
                    task,
                    path,
                    prepCpuNanos,
                    null,
                    device,
                    false,
                    new PreparedSample.Piece(index, count, bytes, 0, length, true));
        }
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
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        TASK.copy(in, out);
        PATH.copy(in, out);
        out.writeLong(in.readLong());
        out.writeInt(in.readInt());
        int form = in.readUnsignedByte();
        out.writeByte(form);
        if (form == INLINE) {
            PATCH.copy(in, out);
        } else if (form == PIECE) {
            out.writeInt(in.readInt());
            out.writeInt(in.readInt());
            int length = pieceLength(in.readInt());
            out.writeInt(length);
            BulkIo.copy(in, out, length);
        }
    }

    /** A piece's length as read, failing on a corrupt one rather than allocating it. */
    private static int pieceLength(int length) throws IOException {
        if (length < 0) {
            throw new IOException("corrupt sample piece of " + length + " bytes");
        }
        return length;
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
