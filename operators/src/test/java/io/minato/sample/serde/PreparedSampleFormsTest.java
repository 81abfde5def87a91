package io.minato.sample.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.spi.Shape3;
import java.util.Arrays;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * The four forms a prepared sample crosses an operator boundary in: handed off in this JVM, inline
 * bytes, identity only (checkpoints), or one piece of a large sample's bytes.
 */
class PreparedSampleFormsTest {
    private static final Shape3 PATCH = Shape3.cube(32); // 160 KiB

    @Test
    void shouldHandThePatchOverInThisJvmWhileALoaderRunsAndSendOnlyTheIdentity() throws Exception {
        PreparedSample s = SampleFixtures.prepared(41, SamplePath.FAST, PATCH).withHandOff(true);
        byte[] handedOff;
        try (var r = SampleHandoff.jvm().reserve(1)) {
            handedOff = write(PreparedSampleSerializer.INSTANCE, s);
            PreparedSample back = read(handedOff);
            assertThat(back.patch()).as("the very arrays, not a copy").isSameAs(s.patch());
            assertThat(back.task()).isEqualTo(s.task());
            assertThat(back.prepCpuNanos()).isEqualTo(s.prepCpuNanos());
            assertThat(back.device()).isEqualTo(s.device()).isEqualTo(2);
        }
        assertThat(handedOff.length).isLessThan(64);
        // Read again (a replay after a restore): the patch is gone, the identity remains.
        PreparedSample replayed = read(handedOff);
        assertThat(replayed.patch()).isNull();
        assertThat(replayed.task()).isEqualTo(s.task());
        assertThat(replayed.device()).isEqualTo(2);
    }

    /**
     * A receiver in another TaskManager (or one not known to run here) gets the bytes, even while
     * the handoff has room: the sample crosses once, and is never prepared again over there.
     */
    @Test
    void shouldSendTheBytesInlineWhenTheReceiverIsNotKnownToRunHere() throws Exception {
        PreparedSample s = SampleFixtures.prepared(44, SamplePath.FAST, PATCH);
        assertThat(s.handOff()).isFalse();
        try (var r = SampleHandoff.jvm().reserve(1)) {
            byte[] inline = write(PreparedSampleSerializer.INSTANCE, s);
            assertThat(SampleHandoff.jvm().parked()).isZero();
            assertThat(inline.length).isGreaterThan((int) (5 * PATCH.voxels()));
            PreparedSample back = read(inline);
            assertThat(back.patch().sameContent(s.patch())).isTrue();
            assertThat(back.handOff()).as("read back: bytes unless routed anew").isFalse();
        }
    }

    @Test
    void shouldSendTheBytesInlineWhenNoLoaderReservedRoom() throws Exception {
        PreparedSample s = SampleFixtures.prepared(42, SamplePath.SLOW, PATCH).withHandOff(true);
        byte[] inline = write(PreparedSampleSerializer.INSTANCE, s);
        assertThat(inline.length).isGreaterThan((int) (5 * PATCH.voxels()));
        PreparedSample back = read(inline);
        assertThat(back.patch()).isNotSameAs(s.patch());
        assertThat(back.patch().sameContent(s.patch())).isTrue();
    }

    @Test
    void shouldCheckpointTheIdentityOnly() throws Exception {
        PreparedSample s = SampleFixtures.prepared(43, SamplePath.FAST, PATCH);
        try (var r = SampleHandoff.jvm().reserve(1)) {
            byte[] identity = write(PreparedSampleIdentitySerializer.INSTANCE, s);
            assertThat(identity.length).isLessThan(64);
            assertThat(SampleHandoff.jvm().parked()).as("nothing parked for a checkpoint").isZero();
            PreparedSample back = read(identity);
            assertThat(back.patch()).isNull();
            assertThat(back.path()).isEqualTo(SamplePath.FAST);
        }
    }

    /**
     * A piece carries its range of the shared buffer, no more; it reads back as its own array, and
     * Flink's {@code copy(in, out)} (used where records are copied as bytes) passes it through.
     */
    @Test
    void shouldSendAPieceAsItsRangeOfBytesAndCopyItThroughAsBytes() throws Exception {
        byte[] shared = new byte[1000];
        for (int i = 0; i < shared.length; i++) {
            shared[i] = (byte) (i * 31);
        }
        PreparedSample piece =
                SampleFixtures.prepared(45, SamplePath.SLOW, PATCH)
                        .withPatch(null)
                        .asPiece(new PreparedSample.Piece(1, 3, shared, 400, 350));
        byte[] written = write(PreparedSampleSerializer.INSTANCE, piece);
        assertThat(written.length).isBetween(350, 350 + 64);

        PreparedSample back = read(written);
        assertThat(back.patch()).isNull();
        assertThat(back.task()).isEqualTo(piece.task());
        assertThat(back.path()).isEqualTo(SamplePath.SLOW);
        assertThat(back.prepCpuNanos()).isEqualTo(piece.prepCpuNanos());
        assertThat(back.device()).isEqualTo(piece.device());
        assertThat(back.piece().index()).isEqualTo(1);
        assertThat(back.piece().count()).isEqualTo(3);
        assertThat(back.piece().last()).isFalse();
        assertThat(range(back.piece())).isEqualTo(Arrays.copyOfRange(shared, 400, 750));

        DataOutputSerializer copied = new DataOutputSerializer(16);
        PreparedSampleSerializer.INSTANCE.copy(new DataInputDeserializer(written), copied);
        assertThat(copied.getCopyOfBuffer()).isEqualTo(written);

        PreparedSample copy = PreparedSampleSerializer.INSTANCE.copy(piece);
        assertThat(copy.piece().bytes()).isNotSameAs(shared);
        assertThat(range(copy.piece())).isEqualTo(Arrays.copyOfRange(shared, 400, 750));
    }

    @Test
    void shouldCheckpointAPieceAsTheIdentityOfItsSampleWithoutItsBytes() throws Exception {
        PreparedSample piece =
                SampleFixtures.prepared(46, SamplePath.FAST, PATCH)
                        .withPatch(null)
                        .asPiece(new PreparedSample.Piece(0, 2, new byte[4096], 0, 4096));
        byte[] identity = write(PreparedSampleIdentitySerializer.INSTANCE, piece);
        assertThat(identity.length).isLessThan(64);
        PreparedSample back = read(identity);
        assertThat(back.piece()).isNull();
        assertThat(back.patch()).isNull();
        assertThat(back.task()).isEqualTo(piece.task());
    }

    private static byte[] range(PreparedSample.Piece p) {
        return Arrays.copyOfRange(p.bytes(), p.offset(), p.offset() + p.length());
    }

    private static byte[] write(
            org.apache.flink.api.common.typeutils.TypeSerializer<PreparedSample> serializer,
            PreparedSample s)
            throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(256);
        serializer.serialize(s, out);
        return out.getCopyOfBuffer();
    }

    private static PreparedSample read(byte[] bytes) throws Exception {
        return PreparedSampleSerializer.INSTANCE.deserialize(new DataInputDeserializer(bytes));
    }
}
