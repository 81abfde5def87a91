package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.sample.serde.BatchSerializer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Checkpoint format of {@link TrainerWriterState}.
 *
 * <p>Queued batches are written with the job's {@link BatchSerializer}, their samples as identities
 * only (since version 2; version 1 held the patches): the trainer prepares them again after a
 * restore. They are written without how long their loader held them back ({@link
 * Batch#heldBackNanos}), and read back as held for no time: the wait for a batch queued before the
 * restore is not its loader's doing. Version 3 added the first epoch's end to the counters, version
 * 4 the head-of-line part of the wait (a version-3 state reads as none). A change to that format
 * needs a new version here.
 */
public final class TrainerWriterStateSerializer
        implements SimpleVersionedSerializer<TrainerWriterState> {

    static final int VERSION = 4;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(TrainerWriterState state) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(estimateBytes(state));
        out.writeInt(state.device());
        out.writeInt(state.queued().size());
        for (Batch batch : state.queued()) {
            BatchSerializer.serializeIdentities(batch, out);
        }
        DeviceCounters c = state.counters();
        out.writeLong(c.steps());
        out.writeLong(c.fast());
        out.writeLong(c.slow());
        out.writeLong(c.busyNanos());
        out.writeLong(c.waitNanos());
        out.writeLong(c.headOfLineNanos());
        out.writeDouble(c.firstLoss());
        out.writeDouble(c.lastLoss());
        out.writeLong(c.firstStepStartMillis());
        out.writeLong(c.lastStepEndMillis());
        out.writeLong(c.firstEpochEndMillis());
        out.writeLong(c.samplesAtFirstEpochEnd());
        out.writeInt(state.consumerState().length);
        out.write(state.consumerState());
        out.writeLong(state.traceLength());
        return out.getCopyOfBuffer();
    }

    @Override
    public TrainerWriterState deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION && version != 3) {
            throw new IOException(
                    "trainer sink state has format version "
                            + version
                            + ", this build reads versions 3 to "
                            + VERSION
                            + ": restore with the build that wrote the checkpoint");
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        int device = in.readInt();
        int n = checkedCount(in.readInt(), "queued batches");
        List<Batch> queued = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            queued.add(BatchSerializer.INSTANCE.deserialize(in));
        }
        DeviceCounters counters =
                new DeviceCounters(
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        version >= 4 ? in.readLong() : 0,
                        in.readDouble(),
                        in.readDouble(),
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        in.readLong());
        byte[] accelerator = new byte[checkedCount(in.readInt(), "accelerator state bytes")];
        in.readFully(accelerator);
        long traceLength = in.readLong();
        if (in.available() != 0) {
            throw new IOException(
                    "trainer sink state has " + in.available() + " unexpected trailing bytes");
        }
        return new TrainerWriterState(device, queued, counters, accelerator, traceLength);
    }

    private static int estimateBytes(TrainerWriterState state) {
        long bytes = 256L + state.consumerState().length;
        for (Batch batch : state.queued()) {
            bytes += 16 + 64L * batch.samples().size();
        }
        return (int) Math.min(bytes, Integer.MAX_VALUE - 16);
    }

    private static int checkedCount(long n, String what) throws IOException {
        if (n < 0 || n > Integer.MAX_VALUE - 16) {
            throw new IOException("trainer sink state is corrupt: " + n + " " + what);
        }
        return (int) n;
    }
}
