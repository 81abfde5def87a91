package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.PreparedSample.Piece;
import io.minato.spi.Patch;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Sends a sample whose patch is too large for one record as several records, each a {@link Piece}
 * of its serialized patch, and puts the patch together again on the receiving side.
 *
 * <p>A producer keeps one buffer for its pieces, reused from sample to sample: the pieces of a
 * sample share it until the producer's next sample, which is safe because Flink serializes a record
 * as it is emitted (and a chained receiver gets a copy).
 */
public final class SampleChunks {
    /**
     * The most patch bytes one record carries. Flink's {@code
     * SpillingAdaptiveSpanningRecordDeserializer} writes every received record over 5 MiB to disk
     * and reads it back ({@code DEFAULT_THRESHOLD_FOR_SPILLING}, not configurable): a patch-128
     * sample (10 MiB) cost the trainers' TaskManager 12-18 ms CPU and a 10 MiB file each. 4 MiB
     * leaves room for the record's header.
     */
    public static final int MAX_BYTES = 4 << 20;

    /**
     * Accumulator: prepared samples sent in pieces (to a receiver in another TaskManager, with a
     * patch over the limit).
     */
    public static final String SENT_IN_PIECES = "samplesSentInPieces";

    /** Bytes {@link Patch#writeTo} writes before the arrays: the shape and the target's length. */
    private static final int PATCH_HEADER_BYTES = 4 * Integer.BYTES;

    private final int maxBytes;
    private final DataOutputSerializer buffer = new DataOutputSerializer(64);

    /**
     * @param maxBytes the most patch bytes a record carries ({@link #MAX_BYTES}; less in tests,
     *     whose samples are small)
     */
    SampleChunks(int maxBytes) {
        if (maxBytes < 1) {
            throw new IllegalArgumentException("piece bytes must be >= 1: " + maxBytes);
        }
        this.maxBytes = maxBytes;
    }

    /** Whether {@code sample}, sent with its bytes, goes in pieces. */
    boolean inPieces(PreparedSample sample) {
        Patch patch = sample.patch();
        return patch != null
                && sample.piece() == null
                && PATCH_HEADER_BYTES + patch.bytes() > maxBytes;
    }

    /**
     * {@code sample}'s pieces in order: its patch serialized once, into this producer's buffer,
     * which they share until the next call.
     */
    List<PreparedSample> pieces(PreparedSample sample) {
        buffer.clear();
        try {
            sample.patch().writeTo(buffer);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // an in-memory buffer does not fail
        }
        byte[] bytes = buffer.getSharedBuffer();
        int total = buffer.length();
        int count = (total + maxBytes - 1) / maxBytes;
        List<PreparedSample> pieces = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int offset = i * maxBytes;
            pieces.add(
                    sample.asPiece(
                            new Piece(
                                    i, count, bytes, offset, Math.min(maxBytes, total - offset))));
        }
        return pieces;
    }

    /**
     * One sample's pieces as they arrive, in order; {@link #sample} once the last is there. The
     * bytes are read back in place, without joining them into one array first.
     */
    static final class Assembly {
        private final int key;
        private final PreparedSample first;
        private final List<InputStream> parts;

        /**
         * Starts with {@code piece}, which must be its sample's first, for device key {@code key}.
         */
        Assembly(int key, PreparedSample piece) {
            Piece p = piece.piece();
            if (p.index() != 0) {
                throw new IllegalStateException(
                        name(piece) + " came before its first: pieces of a sample travel in order");
            }
            this.key = key;
            this.first = piece;
            this.parts = new ArrayList<>(p.count());
            parts.add(stream(p));
        }

        /** "piece I of N of sample TASK", for the errors. */
        private static String name(PreparedSample piece) {
            Piece p = piece.piece();
            return "piece " + p.index() + " of " + p.count() + " of sample " + piece.task();
        }

        /** The device key the sample is for. */
        int key() {
            return key;
        }

        /** The whole sample, without a patch: what a checkpoint keeps of a partial one. */
        PreparedSample identity() {
            return first.withoutPiece();
        }

        /** Adds the next piece; true when it was the last. */
        boolean add(PreparedSample piece) {
            Piece p = piece.piece();
            if (p.index() != parts.size() || p.count() != first.piece().count()) {
                throw new IllegalStateException(
                        name(piece)
                                + " after "
                                + parts.size()
                                + " of "
                                + first.piece().count()
                                + ": pieces of a sample travel in order");
            }
            parts.add(stream(p));
            return complete();
        }

        boolean complete() {
            return parts.size() == first.piece().count();
        }

        /** The whole sample with its patch read back from the pieces. */
        PreparedSample sample() throws IOException {
            if (!complete()) {
                throw new IllegalStateException("sample " + first.task() + " is not complete");
            }
            try (DataInputStream in =
                    new DataInputStream(new SequenceInputStream(Collections.enumeration(parts)))) {
                Patch patch = Patch.readFrom(in);
                if (in.read() != -1) {
                    throw new IOException(
                            "sample " + first.task() + ": bytes left over after its patch");
                }
                return identity().withPatch(patch);
            }
        }

        private static InputStream stream(Piece p) {
            return new ByteArrayInputStream(p.bytes(), p.offset(), p.length());
        }
    }
}
