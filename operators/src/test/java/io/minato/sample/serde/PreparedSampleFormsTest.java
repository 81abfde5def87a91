package io.minato.sample.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.transform.Shape3;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * The three forms a prepared sample crosses an operator boundary in: handed off in this JVM, inline
 * bytes, or identity only (checkpoints).
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
