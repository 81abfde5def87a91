package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.spi.Patch;
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
     * ({@link Patch#writeTo}) from {@code offset} of {@code bytes}. The pieces of a sample travel
     * in order through one channel.
     *
     * <p>{@code pooled}: {@code bytes} came from the {@link io.minato.spi.PatchPool} for this piece
     * alone (a received one), so whoever reads the sample back gives them back; a producer's pieces
     * share its buffer and are never pooled.
     */
    public record Piece(
            int index, int count, byte[] bytes, int offset, int length, boolean pooled) {
        /** A piece whose bytes are not the pool's. */
        public Piece(int index, int count, byte[] bytes, int offset, int length) {
            this(index, count, bytes, offset, length, false);
        }

        public Piece {
            Objects.requireNonNull(bytes, "bytes");
            if (count < 1 || index < 0 || index >= count) {
                throw new IllegalArgumentException("piece " + index + " of " + count);
            }
            if (offset < 0 || length < 0 || offset + length > bytes.length) {
                throw new IllegalArgumentException(
                        "piece range "
                                + offset
                                + "+"
                                + length
                                + " outside "
                                + bytes.length
                                + " bytes");
            }
        }

        /** Whether this is the sample's last piece. */
        public boolean last() {
            return index == count - 1;
        }
    }
}
