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

/** Serializes a {@link Batch}: device, sequence, sample count, then each prepared sample. */
public final class BatchSerializer extends SampleSerializer<Batch> {
    private static final long serialVersionUID = 1L;

    public static final BatchSerializer INSTANCE = new BatchSerializer();

    private static final PreparedSampleSerializer SAMPLE = PreparedSampleSerializer.INSTANCE;

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
        return new Batch(from.device(), from.sequence(), samples);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Batch batch, DataOutputView out) throws IOException {
        out.writeInt(batch.device());
        out.writeLong(batch.sequence());
        out.writeInt(batch.samples().size());
        for (PreparedSample sample : batch.samples()) {
            SAMPLE.serialize(sample, out);
        }
    }

    /** The batch with its samples as identities only: what a checkpoint keeps. */
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
        int device = in.readInt();
        long sequence = in.readLong();
        int size = readSize(in);
        // Capped: a corrupt count should fail on reading, not on allocating the list.
        List<PreparedSample> samples = new ArrayList<>(Math.min(size, 1024));
        for (int i = 0; i < size; i++) {
            samples.add(SAMPLE.deserialize(in));
        }
        return new Batch(device, sequence, samples);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        out.writeInt(in.readInt());
        out.writeLong(in.readLong());
        int size = readSize(in);
        out.writeInt(size);
        for (int i = 0; i < size; i++) {
            SAMPLE.copy(in, out);
        }
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
