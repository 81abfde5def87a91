package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.transform.Patch;
import io.minato.transform.Shape3;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Checkpoint format of {@link TrainerWriterState}.
 *
 * <p>Version 1 writes batches with its own small codec ({@link #writeBatch}); a later version will
 * delegate to the Batch TypeSerializer, and this one stays readable for old checkpoints.
 */
public final class TrainerWriterStateSerializer
        implements SimpleVersionedSerializer<TrainerWriterState> {

    static final int VERSION = 1;

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
            writeBatch(batch, out);
        }
        DeviceCounters c = state.counters();
        out.writeLong(c.steps());
        out.writeLong(c.fast());
        out.writeLong(c.slow());
        out.writeLong(c.busyNanos());
        out.writeLong(c.waitNanos());
        out.writeDouble(c.firstLoss());
        out.writeDouble(c.lastLoss());
        out.writeLong(c.firstStepStartMillis());
        out.writeLong(c.lastStepEndMillis());
        out.writeInt(state.acceleratorState().length);
        out.write(state.acceleratorState());
        out.writeLong(state.traceLength());
        return out.getCopyOfBuffer();
    }

    @Override
    public TrainerWriterState deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException(
                    "trainer sink state has format version "
                            + version
                            + ", this build reads version "
                            + VERSION
                            + ": restore with the build that wrote the checkpoint");
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        int device = in.readInt();
        int n = checkedCount(in.readInt(), "queued batches");
        List<Batch> queued = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            queued.add(readBatch(in));
        }
        DeviceCounters counters =
                new DeviceCounters(
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        in.readLong(),
                        in.readDouble(),
                        in.readDouble(),
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
        long bytes = 256L + state.acceleratorState().length;
        for (Batch batch : state.queued()) {
            for (PreparedSample s : batch.samples()) {
                bytes += 64 + 5 * s.patch().shape().voxels();
            }
        }
        return (int) Math.min(bytes, Integer.MAX_VALUE - 16);
    }

    // The private batch codec of version 1.

    static void writeBatch(Batch batch, DataOutputView out) throws IOException {
        out.writeInt(batch.device());
        out.writeLong(batch.sequence());
        out.writeInt(batch.samples().size());
        for (PreparedSample s : batch.samples()) {
            SampleTask t = s.task();
            out.writeLong(t.seed());
            out.writeInt(t.epoch());
            out.writeLong(t.index());
            out.writeInt(t.caseIndex());
            out.writeByte(s.path().ordinal());
            out.writeLong(s.prepCpuNanos());
            Shape3 shape = s.patch().shape();
            out.writeInt(shape.d());
            out.writeInt(shape.h());
            out.writeInt(shape.w());
            for (float v : s.patch().image()) {
                out.writeFloat(v);
            }
            out.write(s.patch().label());
        }
    }

    static Batch readBatch(DataInputView in) throws IOException {
        int device = in.readInt();
        long sequence = in.readLong();
        int n = checkedCount(in.readInt(), "samples in a batch");
        List<PreparedSample> samples = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            SampleTask task =
                    new SampleTask(in.readLong(), in.readInt(), in.readLong(), in.readInt());
            int path = in.readByte();
            if (path < 0 || path >= SamplePath.values().length) {
                throw new IOException("trainer sink state has an unknown sample path " + path);
            }
            long prepCpuNanos = in.readLong();
            Shape3 shape = new Shape3(in.readInt(), in.readInt(), in.readInt());
            int voxels = checkedCount(shape.voxels(), "voxels in a patch");
            float[] image = new float[voxels];
            for (int v = 0; v < voxels; v++) {
                image[v] = in.readFloat();
            }
            byte[] label = new byte[voxels];
            in.readFully(label);
            samples.add(
                    new PreparedSample(
                            task,
                            SamplePath.values()[path],
                            prepCpuNanos,
                            new Patch(shape, image, label)));
        }
        return new Batch(device, sequence, samples);
    }

    private static int checkedCount(long n, String what) throws IOException {
        if (n < 0 || n > Integer.MAX_VALUE - 16) {
            throw new IOException("trainer sink state is corrupt: " + n + " " + what);
        }
        return (int) n;
    }
}
