package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.spi.Patch;
import java.io.ByteArrayOutputStream;
import java.io.DataOutput;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * A sample ready to train on, with where and at what CPU cost it was prepared.
 *
 * <p>{@code device} is the device whose batcher takes the sample, dealt by the worker that finished
 * it when it finished (Minato's loader), or {@link #ANY_DEVICE} where whole batches are routed
 * instead (the in-order loaders, samples prepared again by a trainer).
 *
 * <p>{@code handOff}: its receiver runs in the producer's TaskManager, so the patch may wait in
 * this JVM's {@link SampleHandoff} while only the identity travels. Set by the producer from where
 * the receiver said it runs; otherwise (and always after a record was read back) the patch travels
 * as bytes.
 *
 * <p>{@code piece}: not null for one of the records a large sample crosses to another TaskManager
 * in (a patch over 5 MiB in one record would be spilled to disk by the receiver); such a record has
 * no patch, and its receiver puts the patch together from all the pieces.
 */
@TypeInfo(SampleTypes.PreparedSampleFactory.class)
public record PreparedSample(
        SampleTask task,
        SamplePath path,
        long prepCpuNanos,
        Patch patch,
        int device,
        boolean handOff,
        Piece piece) {

    /** Not dealt to a device: the sample travels inside a batch that names its device. */
    public static final int ANY_DEVICE = -1;

    public PreparedSample {
        if (device < ANY_DEVICE) {
            throw new IllegalArgumentException("device must be >= 0 or ANY_DEVICE: " + device);
        }
        if (piece != null && (patch != null || handOff)) {
            throw new IllegalArgumentException(
                    "a piece of a sample travels as bytes, without the whole patch");
        }
    }

    /** A whole sample (not a piece), whose patch may wait in the handoff or not. */
    public PreparedSample(
            SampleTask task,
            SamplePath path,
            long prepCpuNanos,
            Patch patch,
            int device,
            boolean handOff) {
        this(task, path, prepCpuNanos, patch, device, handOff, null);
    }

    /** A sample dealt to {@code device} whose patch travels as bytes. */
    public PreparedSample(
            SampleTask task, SamplePath path, long prepCpuNanos, Patch patch, int device) {
        this(task, path, prepCpuNanos, patch, device, false);
    }

    /** A sample not dealt to any device. */
    public PreparedSample(SampleTask task, SamplePath path, long prepCpuNanos, Patch patch) {
        this(task, path, prepCpuNanos, patch, ANY_DEVICE, false);
    }

    /** The same sample with its patch (prepared again, or dropped for a checkpoint). */
    public PreparedSample withPatch(Patch newPatch) {
        return new PreparedSample(task, path, prepCpuNanos, newPatch, device, handOff);
    }

    /** The same sample, whose patch may wait in the handoff ({@code true}) or not. */
    public PreparedSample withHandOff(boolean mayWait) {
        return mayWait == handOff
                ? this
                : new PreparedSample(task, path, prepCpuNanos, patch, device, mayWait);
    }

    /** Piece {@code p} of this sample: its identity with a range of its serialized patch. */
    public PreparedSample asPiece(Piece p) {
        return new PreparedSample(
                task, path, prepCpuNanos, null, device, false, Objects.requireNonNull(p));
    }

    /** The whole sample this piece belongs to, without a patch (its identity). */
    public PreparedSample withoutPiece() {
        return new PreparedSample(task, path, prepCpuNanos, null, device, false);
    }

    /**
     * Piece {@code index} of {@code count}: {@code length} bytes of the sample's serialized patch
     * ({@link Patch#writeTo}) from {@code offset}, either of {@code bytes} (a received piece) or of
     * what {@code source} writes (a producer's piece, which refers to the patch itself and is
     * serialized straight from it). The pieces of a sample travel in order through one channel.
     *
     * <p>{@code pooled}: {@code bytes} came from the {@link io.minato.spi.PatchPool} for this piece
     * alone (a received one), so whoever reads the sample back gives them back.
     */
    public record Piece(
            int index,
            int count,
            byte[] bytes,
            int offset,
            int length,
            boolean pooled,
            Patch source) {
        /** A piece of {@code bytes}, which are not the pool's. */
        public Piece(int index, int count, byte[] bytes, int offset, int length) {
            this(index, count, bytes, offset, length, false);
        }

        /** A piece of {@code bytes}, which are the pool's when {@code pooled}. */
        public Piece(int index, int count, byte[] bytes, int offset, int length, boolean pooled) {
            this(
                    index,
                    count,
                    Objects.requireNonNull(bytes, "bytes"),
                    offset,
                    length,
                    pooled,
                    null);
        }

        /** A range of what {@code source} writes, not copied until it is serialized. */
        public static Piece of(int index, int count, Patch source, int offset, int length) {
            return new Piece(
                    index, count, null, offset, length, false, Objects.requireNonNull(source));
        }

        public Piece {
            if ((bytes == null) == (source == null)) {
                throw new IllegalArgumentException("a piece has either bytes or a source patch");
            }
            if (count < 1 || index < 0 || index >= count) {
                throw new IllegalArgumentException("piece " + index + " of " + count);
            }
            long size = bytes != null ? bytes.length : source.serializedBytes();
            if (offset < 0 || length < 0 || offset + (long) length > size) {
                throw new IllegalArgumentException(
                        "piece range " + offset + "+" + length + " outside " + size + " bytes");
            }
            if (pooled && bytes == null) {
                throw new IllegalArgumentException("only received bytes are pooled");
            }
        }

        /** Whether this is the sample's last piece. */
        public boolean last() {
            return index == count - 1;
        }

        /** Writes its {@code length} bytes. */
        public void writeTo(DataOutput out) throws IOException {
            if (bytes != null) {
                out.write(bytes, offset, length);
            } else {
                source.writeRange(out, offset, length);
            }
        }

        /** The same piece in bytes of its own (not pooled, not referring to a patch). */
        public Piece copy() {
            byte[] copy;
            if (bytes != null) {
                copy = Arrays.copyOfRange(bytes, offset, offset + length);
            } else {
                ByteArrayOutputStream out = new ByteArrayOutputStream(length);
                try {
                    source.writeRange(new DataOutputStream(out), offset, length);
                } catch (IOException e) {
                    throw new UncheckedIOException(e); // an in-memory stream does not fail
                }
                copy = out.toByteArray();
            }
            return new Piece(index, count, copy, 0, length);
        }
    }
}
