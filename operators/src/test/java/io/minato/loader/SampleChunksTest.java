package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.sample.PreparedSample;
import io.minato.sample.PreparedSample.Piece;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.serde.PreparedSampleSerializer;
import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import io.minato.spi.Shape3;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A large sample's pieces read back into its patch ({@link SampleChunks.Assembly}): bit for bit
 * whatever the piece size (values straddle pieces), into pooled arrays whatever they held, and a
 * truncated or over-long sequence of pieces fails in one line naming the sample.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SampleChunksTest {
    /** 5x6x7 voxels: 840 bytes of input, 210 of target; odd, so floats straddle odd pieces. */
    private static final Shape3 SHAPE = new Shape3(5, 6, 7);

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5, 7, 13, 2048})
    void shouldReadThePatchBackBitForBitWhateverThePieceSize(int pieceBytes) throws Exception {
        PreparedSample sample = sample(1, SHAPE);
        PatchPool pool = new PatchPool(1 << 20);
        PreparedSample back = assemble(received(pieces(sample, pieceBytes)), pool);
        assertBitIdentical(back.patch(), sample.patch());
        assertThat(back.task()).isEqualTo(sample.task());
        assertThat(back.piece()).isNull();
        assertThat(back.prepCpuNanos()).isEqualTo(sample.prepCpuNanos());
    }

    @Test
    void shouldReadAClassIndexTargetBack() throws Exception {
        Shape3 shape = new Shape3(3, 4, 5);
        float[] image = new float[(int) shape.voxels()];
        Arrays.fill(image, -0.0f);
        PreparedSample sample =
                new PreparedSample(
                        task(2), SamplePath.FAST, 7, Patch.ofClass(shape, image, 987_654), 0);
        PreparedSample back = assemble(received(pieces(sample, 3)), new PatchPool(1 << 20));
        assertBitIdentical(back.patch(), sample.patch());
        assertThat(back.patch().classIndex()).isEqualTo(987_654);
    }

    /**
     * Pooled arrays are reused as they are: every value of the patch, and only the pieces' ranges
     * of longer piece arrays, are read.
     */
    @Test
    void shouldOverwriteDirtyPooledArraysAndReadOnlyThePiecesRanges() throws Exception {
        PreparedSample sample = sample(3, SHAPE);
        PatchPool pool = new PatchPool(1 << 20);
        Patch dirty = pool.take(SHAPE, (int) SHAPE.voxels());
        Arrays.fill(dirty.image(), Float.intBitsToFloat(0x7fc0dead));
        Arrays.fill(dirty.label(), (byte) 0x5a);
        pool.give(dirty);
        List<PreparedSample> pieces = new ArrayList<>();
        for (PreparedSample p : pieces(sample, 5)) {
            Piece piece = p.piece();
            // Garbage around the range, as in a longer pooled array.
            byte[] wide = new byte[piece.length() + 11];
            Arrays.fill(wide, (byte) 0x77);
            System.arraycopy(piece.bytes(), piece.offset(), wide, 6, piece.length());
            pieces.add(
                    sample.asPiece(
                            new Piece(piece.index(), piece.count(), wide, 6, piece.length())));
        }
        PreparedSample back = assemble(pieces, pool);
        assertThat(back.patch().image()).isSameAs(dirty.image());
        assertThat(back.patch().label()).isSameAs(dirty.label());
        assertBitIdentical(back.patch(), sample.patch());
    }

    /** Received pieces' arrays go back to the pool once the sample is read, and are reused. */
    @Test
    void shouldGiveReceivedPieceArraysBackToThePoolOnceTheSampleIsRead() throws Exception {
        PreparedSample sample = sample(4, SHAPE);
        List<PreparedSample> received = received(pieces(sample, 512));
        assertThat(received).allSatisfy(p -> assertThat(p.piece().pooled()).isTrue());
        // The serializer takes from the JVM's pool; the assembly gives back to this one.
        PatchPool pool = new PatchPool(1 << 20);
        assemble(received, pool);
        assertThat(pool.bytes())
                .as("three piece arrays of one grain each")
                .isEqualTo(3L * PatchPool.BYTES_GRAIN);
        byte[] again = pool.takeBytes(512);
        assertThat(received.stream().map(p -> p.piece().bytes())).anyMatch(b -> b == again);
    }

    /**
     * A producer's pieces are ranges of the patch itself, not a copy, and never pooled; handed over
     * as they are (no serialization), they still read back.
     */
    @Test
    void shouldMakeAProducersPiecesRangesOfThePatchThatAreNeverPooled() throws Exception {
        PreparedSample sample = sample(5, SHAPE);
        List<PreparedSample> pieces = new SampleChunks(512).pieces(sample);
        assertThat(pieces)
                .hasSize(3)
                .allSatisfy(p -> assertThat(p.piece().source()).isSameAs(sample.patch()))
                .allSatisfy(p -> assertThat(p.piece().bytes()).isNull())
                .allSatisfy(p -> assertThat(p.piece().pooled()).isFalse());
        PatchPool pool = new PatchPool(1 << 20);
        assertBitIdentical(assemble(pieces, pool).patch(), sample.patch());
        assertThat(pool.bytes()).isZero();
    }

    @Test
    void shouldFailInOneLineNamingTheSampleWhenItsPiecesAreTruncated() throws Exception {
        PreparedSample sample = sample(6, SHAPE);
        List<PreparedSample> pieces = pieces(sample, 300);
        int last = pieces.size() - 1;
        Piece p = pieces.get(last).piece();
        pieces.set(
                last,
                sample.asPiece(
                        new Piece(p.index(), p.count(), p.bytes(), p.offset(), p.length() - 1)));
        assertFailsNaming(pieces, sample.task(), "truncated");
    }

    @Test
    void shouldFailInOneLineNamingTheSampleWhenItsPiecesEndInsideTheHeader() throws Exception {
        PreparedSample sample = sample(7, SHAPE);
        Piece first = pieces(sample, 5).get(0).piece();
        List<PreparedSample> pieces =
                List.of(sample.asPiece(new Piece(0, 1, first.bytes(), first.offset(), 5)));
        assertFailsNaming(pieces, sample.task(), "truncated");
    }

    @Test
    void shouldFailInOneLineNamingTheSampleWhenBytesAreLeftOver() throws Exception {
        PreparedSample sample = sample(8, SHAPE);
        List<PreparedSample> pieces = pieces(sample, 300);
        int last = pieces.size() - 1;
        Piece p = pieces.get(last).piece();
        byte[] longer = Arrays.copyOfRange(p.bytes(), p.offset(), p.offset() + p.length() + 3);
        pieces.set(last, sample.asPiece(new Piece(p.index(), p.count(), longer, 0, longer.length)));
        assertFailsNaming(pieces, sample.task(), "left over");
    }

    @Test
    void shouldFailInOneLineNamingTheSampleWhenItsHeaderIsCorrupt() throws Exception {
        PreparedSample sample = sample(9, SHAPE);
        List<PreparedSample> pieces = pieces(sample, 2048);
        Piece p = pieces.get(0).piece();
        byte[] corrupt = Arrays.copyOfRange(p.bytes(), p.offset(), p.offset() + p.length());
        corrupt[0] = (byte) 0x80; // a negative depth
        pieces.set(0, sample.asPiece(new Piece(0, p.count(), corrupt, 0, corrupt.length)));
        assertFailsNaming(pieces, sample.task(), "corrupt patch shape");
    }

    private static void assertFailsNaming(
            List<PreparedSample> pieces, SampleTask task, String problem) {
        PatchPool pool = new PatchPool(1 << 20);
        assertThatThrownBy(() -> assemble(pieces, pool))
                .isInstanceOf(IOException.class)
                .hasMessageStartingWith("sample " + task + ": ")
                .hasMessageContaining(problem)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    private static void assertBitIdentical(Patch actual, Patch expected) {
        assertThat(actual.shape()).isEqualTo(expected.shape());
        int[] a = new int[actual.image().length];
        int[] e = new int[expected.image().length];
        for (int i = 0; i < a.length; i++) {
            a[i] = Float.floatToRawIntBits(actual.image()[i]);
        }
        for (int i = 0; i < e.length; i++) {
            e[i] = Float.floatToRawIntBits(expected.image()[i]);
        }
        assertThat(a).isEqualTo(e);
        assertThat(actual.label()).isEqualTo(expected.label());
    }

    /** The sample read back from {@code pieces}, fed in order to one assembly. */
    private static PreparedSample assemble(List<PreparedSample> pieces, PatchPool pool)
            throws IOException {
        SampleChunks.Assembly assembly = new SampleChunks.Assembly(0, pieces.get(0));
        for (int i = 1; i < pieces.size(); i++) {
            assembly.add(pieces.get(i));
        }
        assertThat(assembly.complete()).isTrue();
        return assembly.sample(pool);
    }

    /** {@code sample}'s pieces, each copied into bytes of its own. */
    private static List<PreparedSample> pieces(PreparedSample sample, int pieceBytes) {
        List<PreparedSample> pieces = new ArrayList<>();
        for (PreparedSample p : new SampleChunks(pieceBytes).pieces(sample)) {
            pieces.add(PreparedSampleSerializer.INSTANCE.copy(p));
        }
        return pieces;
    }

    /** {@code pieces} as a receiver reads them: written and read by the records' serializer. */
    private static List<PreparedSample> received(List<PreparedSample> pieces) throws IOException {
        List<PreparedSample> received = new ArrayList<>();
        for (PreparedSample p : pieces) {
            DataOutputSerializer out = new DataOutputSerializer(64);
            PreparedSampleSerializer.INSTANCE.serialize(p, out);
            received.add(
                    PreparedSampleSerializer.INSTANCE.deserialize(
                            new DataInputDeserializer(out.getCopyOfBuffer())));
        }
        return received;
    }

    private static SampleTask task(long index) {
        return new SampleTask(7, 0, index, 0);
    }

    /** Random values with NaN payloads, signed zeros, infinities and subnormals among them. */
    private static PreparedSample sample(long index, Shape3 shape) {
        SplittableRandom r = new SplittableRandom(index);
        float[] image = new float[(int) shape.voxels()];
        byte[] label = new byte[image.length];
        for (int i = 0; i < image.length; i++) {
            image[i] = Float.intBitsToFloat(r.nextInt());
            label[i] = (byte) r.nextInt(256);
        }
        image[0] = Float.intBitsToFloat(0x7fc12345);
        image[1] = -0.0f;
        image[2] = Float.NEGATIVE_INFINITY;
        image[3] = Float.MIN_VALUE;
        return new PreparedSample(
                task(index), SamplePath.FAST, 1000 + index, new Patch(shape, image, label), 1);
    }
}
