package io.minato.sample.serde;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializes a {@link Batch} in one of two layouts. A batch that no loader held back is its device
 * (never negative), sequence, sample count, then each prepared sample: the only layout before
 * batches carried {@link Batch#heldBackNanos}, so batches of an earlier build (in flight in an
 * unaligned checkpoint, or queued in a trainer's state) read as held back for 0 ns. A batch that
 * was held back starts with the mark {@value #HELD_BACK}, then device, sequence, the held-back
 * nanos, sample count and samples.
 */
public final class BatchSerializer extends SampleSerializer<Batch> {
    private static final long serialVersionUID = 1L;

    public static final BatchSerializer INSTANCE = new BatchSerializer();

    private static final PreparedSampleSerializer SAMPLE = PreparedSampleSerializer.INSTANCE;

    /** Starts the layout of a held-back batch; a device is never negative. */
    static final int HELD_BACK = -1;

    private static final Batch EMPTY = new Batch(0, 0, List.of());

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public Batch createInstance() {
        return EMPTY;
    }

    /** Copies every sample's patch; the list itself is immutable. */
    @Override
    public Batch copy(Batch from) {
        List<PreparedSample> samples = new ArrayList<>(from.samples().size());
        for (PreparedSample sample : from.samples()) {
            samples.add(SAMPLE.copy(sample));
        }
        return from.withSamples(samples);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Batch batch, DataOutputView out) throws IOException {
        boolean held = batch.heldBackNanos() > 0;
        if (held) {
            out.writeInt(HELD_BACK);
        }
        out.writeInt(batch.device());
        out.writeLong(batch.sequence());
        if (held) {
            out.writeLong(batch.heldBackNanos());
        }
        out.writeInt(batch.samples().size());
        for (PreparedSample sample : batch.samples()) {
            SAMPLE.serialize(sample, out);
        }
    }

    /**
     * The batch with its samples as identities only and without its hold: what a checkpoint keeps.
     * After a restore the wait for a queued batch is not its loader's doing.
     */
    public static void serializeIdentities(Batch batch, DataOutputView out) throws IOException {
        out.writeInt(batch.device());
        out.writeLong(batch.sequence());
        out.writeInt(batch.samples().size());
        for (PreparedSample sample : batch.samples()) {
            PreparedSampleSerializer.serializeIdentity(sample, out);
        }
    }

    @Override
    public Batch deserialize(DataInputView in) throws IOException {
        int first = in.readInt();
        boolean held = first == HELD_BACK;
        int device = held ? in.readInt() : first;
        if (device < 0) {
            throw new IOException("corrupt batch: device " + device);
        }
        long sequence = in.readLong();
        long heldBackNanos = held ? readHeldBack(in) : 0;
        int size = readSize(in);
        // Capped: a corrupt count should fail on reading, not on allocating the list.
        List<PreparedSample> samples = new ArrayList<>(Math.min(size, 1024));
        for (int i = 0; i < size; i++) {
            samples.add(SAMPLE.deserialize(in));
        }
        return new Batch(device, sequence, samples, heldBackNanos);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        int first = in.readInt();
        out.writeInt(first);
        if (first == HELD_BACK) {
            out.writeInt(in.readInt());
            out.writeLong(in.readLong());
            out.writeLong(readHeldBack(in));
        } else {
            out.writeLong(in.readLong());
        }
        int size = readSize(in);
        out.writeInt(size);
        for (int i = 0; i < size; i++) {
            SAMPLE.copy(in, out);
        }
    }

    private static long readHeldBack(DataInputView in) throws IOException {
        long nanos = in.readLong();
        if (nanos < 0) {
            throw new IOException("corrupt batch: held back for " + nanos + " ns");
        }
        return nanos;
    }

    private static int readSize(DataInputView in) throws IOException {
        int size = in.readInt();
        if (size < 0) {
            throw new IOException("corrupt batch: " + size + " samples");
        }
        return size;
    }

    @Override
    public TypeSerializerSnapshot<Batch> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; a change to a nested format is a change to this one. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Batch> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
