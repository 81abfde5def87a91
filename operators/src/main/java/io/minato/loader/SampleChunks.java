package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.PreparedSample.Piece;
import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import io.minato.spi.Shape3;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Sends a sample whose patch is too large for one record as several records, each a {@link Piece}
 * of its serialized patch, and puts the patch together again on the receiving side.
 *
 * <p>A producer's pieces refer to ranges of the patch itself, serialized straight from its arrays
 * as each record is emitted: no copy of the whole patch in between. Once they are emitted nothing
 * refers to the patch, and the producer may give its arrays back to the {@link PatchPool}.
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

    private final int maxBytes;

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
        return patch != null && sample.piece() == null && patch.serializedBytes() > maxBytes;
    }

    /** {@code sample}'s pieces in order, each a range of its patch (not copied). */
    List<PreparedSample> pieces(PreparedSample sample) {
        Patch patch = sample.patch();
        long total = patch.serializedBytes();
        int count = Math.toIntExact((total + maxBytes - 1) / maxBytes);
        List<PreparedSample> pieces = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int offset = Math.toIntExact((long) i * maxBytes);
            int length = (int) Math.min(maxBytes, total - offset);
            pieces.add(sample.asPiece(Piece.of(i, count, patch, offset, length)));
        }
        return pieces;
    }

    /**
     * One sample's pieces as they arrive, in order; {@link #sample} once the last is there. The
     * patch is read straight from the pieces' bytes into arrays from the {@link PatchPool}, without
     * joining or streaming them first; pooled pieces go back to the pool once read.
     */
    static final class Assembly {
        private final int key;
        private final PreparedSample first;
        private final List<Piece> parts;

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
            parts.add(p);
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
            parts.add(p);
            return complete();
        }

        boolean complete() {
            return parts.size() == first.piece().count();
        }

        /**
         * The whole sample with its patch read back from the pieces into arrays from {@code pool}.
         * Called once: the pieces' pooled bytes go back to {@code pool}.
         */
        PreparedSample sample(PatchPool pool) throws IOException {
            if (!complete()) {
                throw new IllegalStateException("sample " + first.task() + " is not complete");
            }
            Patch patch = new PieceReader(parts, "sample " + first.task()).patch(pool);
            for (Piece p : parts) {
                if (p.pooled()) {
                    pool.giveBytes(p.bytes());
                }
            }
            parts.clear();
            return identity().withPatch(patch);
        }
    }

    /**
     * Reads what {@link Patch#writeTo} wrote (big-endian header ints, little-endian floats, the
     * target's bytes) from a sequence of pieces' ranges; a value may straddle two pieces.
     */
    static final class PieceReader {
        private final List<Piece> pieces;
        private final String name;
        private final long total;
        private final byte[] straddle = new byte[Patch.HEADER_BYTES];
        private int next;
        private byte[] bytes;
        private int pos;
        private int end;
        private long read;

        /** {@code name} says whose bytes these are, in errors ("sample TASK"). */
        PieceReader(List<Piece> pieces, String name) {
            this.pieces = pieces;
            this.name = name;
            long sum = 0;
            for (Piece p : pieces) {
                sum += p.length();
            }
            this.total = sum;
        }

        /**
         * The patch, in arrays taken from {@code pool} (every value of which is overwritten), with
         * no bytes left after it.
         */
        Patch patch(PatchPool pool) throws IOException {
            readFully(straddle, 0, Patch.HEADER_BYTES);
            Shape3 shape;
            int labelBytes;
            try {
                DataInputStream header = new DataInputStream(new ByteArrayInputStream(straddle));
                shape = Patch.readShape(header);
                labelBytes = Patch.readLabelLength(header, shape);
            } catch (IOException e) {
                throw new IOException(name + ": " + e.getMessage(), e);
            }
            long needed = Patch.HEADER_BYTES + (long) Float.BYTES * shape.voxels() + labelBytes;
            if (needed != total) {
                throw new IOException(
                        name
                                + ": its pieces hold "
                                + total
                                + " bytes, its patch of "
                                + shape
                                + " and "
                                + labelBytes
                                + " target bytes "
                                + needed
                                + (total < needed ? " (truncated)" : " (bytes left over)"));
            }
            Patch patch = pool.take(shape, labelBytes);
            readFloats(patch.image());
            readFully(patch.label(), 0, labelBytes);
            return patch;
        }

        /** Moves to the next piece with bytes left when this one is used up; false at the end. */
        private boolean more() {
            while (pos == end) {
                if (next == pieces.size()) {
                    return false;
                }
                Piece p = pieces.get(next++);
                if (p.bytes() == null) {
                    p = p.copy(); // a producer's piece handed over as it is (tests)
                }
                bytes = p.bytes();
                pos = p.offset();
                end = p.offset() + p.length();
            }
            return true;
        }

        private void readFully(byte[] to, int offset, int length) throws IOException {
            while (length > 0) {
                if (!more()) {
                    throw new IOException(
                            name + ": its pieces end after " + read + " bytes (truncated)");
                }
                int n = Math.min(length, end - pos);
                System.arraycopy(bytes, pos, to, offset, n);
                pos += n;
                offset += n;
                length -= n;
                read += n;
            }
        }

        private void readFloats(float[] to) throws IOException {
            int at = 0;
            while (at < to.length) {
                if (!more()) {
                    throw new IOException(
                            name + ": its pieces end after " + read + " bytes (truncated)");
                }
                int whole = Math.min((end - pos) / Float.BYTES, to.length - at);
                if (whole > 0) {
                    ByteBuffer.wrap(bytes, pos, whole * Float.BYTES)
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .asFloatBuffer()
                            .get(to, at, whole);
                    pos += whole * Float.BYTES;
                    read += (long) whole * Float.BYTES;
                    at += whole;
                } else {
                    // A value split between this piece and the next.
                    readFully(straddle, 0, Float.BYTES);
                    to[at++] =
                            ByteBuffer.wrap(straddle, 0, Float.BYTES)
                                    .order(ByteOrder.LITTLE_ENDIAN)
                                    .getFloat();
                }
            }
        }
    }
}
