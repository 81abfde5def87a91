package io.minato.sample.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.Preparation.Step;
import io.minato.workload.kits19.Volume;
import java.io.IOException;
import java.util.List;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

class SampleSerializersTest {

    private static final List<TypeSerializer<?>> ALL =
            List.of(
                    SampleTaskSerializer.INSTANCE,
                    SamplePathSerializer.INSTANCE,
                    PatchSerializer.INSTANCE,
                    PreparedSampleSerializer.INSTANCE,
                    UnfinishedSampleSerializer.INSTANCE,
                    BatchSerializer.INSTANCE);

    @Test
    void shouldRoundTripEverySampleTypeByContent() throws IOException {
        assertRoundTrip(SampleTaskSerializer.INSTANCE, SampleFixtures.task(9));
        assertRoundTrip(SamplePathSerializer.INSTANCE, SamplePath.SLOW);
        assertRoundTrip(PatchSerializer.INSTANCE, SampleFixtures.patch(new Shape3(2, 3, 4), 1));
        assertRoundTrip(
                PreparedSampleSerializer.INSTANCE,
                SampleFixtures.prepared(5, SamplePath.SLOW, Shape3.cube(8)));
        assertRoundTrip(
                UnfinishedSampleSerializer.INSTANCE, SampleFixtures.unfinished(6, Step.FLIP));
        assertRoundTrip(BatchSerializer.INSTANCE, SampleFixtures.batch(2, 11, 3));
        assertRoundTrip(BatchSerializer.INSTANCE, new Batch(0, 0, List.of()));
        assertRoundTrip(
                BatchSerializer.INSTANCE,
                SampleFixtures.heldBack(SampleFixtures.batch(1, 4, 2), 7_000_000));
    }

    /**
     * A batch nothing held back keeps the layout of the build before batches carried the hold, so
     * such a batch in flight in an older unaligned checkpoint still reads; a held one is marked.
     */
    @Test
    void shouldWriteAnUnheldBatchInTheEarlierLayoutAndMarkAHeldOne() throws IOException {
        DataOutputSerializer earlier = new DataOutputSerializer(16);
        earlier.writeInt(3);
        earlier.writeLong(9);
        earlier.writeInt(0);
        assertThat(serialize(BatchSerializer.INSTANCE, new Batch(3, 9, List.of())))
                .isEqualTo(earlier.getCopyOfBuffer());
        assertThat(deserialize(BatchSerializer.INSTANCE, earlier.getCopyOfBuffer()))
                .isEqualTo(new Batch(3, 9, List.of(), 0));

        DataOutputSerializer held = new DataOutputSerializer(32);
        held.writeInt(BatchSerializer.HELD_BACK);
        held.writeInt(3);
        held.writeLong(9);
        held.writeLong(250);
        held.writeInt(0);
        assertThat(serialize(BatchSerializer.INSTANCE, new Batch(3, 9, List.of(), 250)))
                .isEqualTo(held.getCopyOfBuffer());
    }

    /**
     * A checkpoint keeps no hold: after a restore the wait for a queued batch is not the loader's.
     */
    @Test
    void shouldLeaveTheHoldOutOfABatchsIdentities() throws IOException {
        Batch held = SampleFixtures.heldBack(SampleFixtures.batch(2, 3, 2), 5_000);
        DataOutputSerializer out = new DataOutputSerializer(256);
        BatchSerializer.serializeIdentities(held, out);
        Batch back = deserialize(BatchSerializer.INSTANCE, out.getCopyOfBuffer());
        assertThat(back.heldBackNanos()).isZero();
        assertThat(back.device()).isEqualTo(2);
        assertThat(back.sequence()).isEqualTo(3);
        assertThat(back.samples()).allSatisfy(s -> assertThat(s.patch()).isNull());
    }

    @Test
    void shouldRoundTripAFullSizePatchBitExactlyAtFiveBytesPerVoxel() throws IOException {
        Patch patch = SampleFixtures.patch(Shape3.cube(128), 7);
        byte[] bytes = serialize(PatchSerializer.INSTANCE, patch);
        assertThat(bytes).hasSize(4 * Integer.BYTES + 5 * 128 * 128 * 128);
        Patch back = deserialize(PatchSerializer.INSTANCE, bytes);
        assertThat(back.sameContent(patch)).isTrue();
    }

    @Test
    void shouldResumeAPreparationStoppedMidScanToTheSameResult() throws IOException {
        UnfinishedSample stopped = SampleFixtures.unfinished(3, Step.SCAN);
        assertThat(((Preparation) stopped.steps()).step()).isEqualTo(Step.SCAN);

        UnfinishedSample back = assertRoundTrip(UnfinishedSampleSerializer.INSTANCE, stopped);

        assertThat(back.steps()).as("no loader reserved room: the state came as bytes").isNull();
        Preparation resumed = SampleFixtures.resumed(back);
        assertThat(resumed.step()).isEqualTo(Step.SCAN);
        assertThat(finish(resumed).sameContent(finish((Preparation) stopped.steps()))).isTrue();
    }

    @Test
    void shouldResumeAPreparationStoppedAfterTheCropToTheSameResult() throws IOException {
        UnfinishedSample cropped = SampleFixtures.unfinished(4, Step.FLIP);

        UnfinishedSample back = assertRoundTrip(UnfinishedSampleSerializer.INSTANCE, cropped);

        Preparation resumed = SampleFixtures.resumed(back);
        assertThat(resumed.step()).isEqualTo(Step.FLIP);
        assertThat(finish(resumed).sameContent(finish((Preparation) cropped.steps()))).isTrue();
    }

    @Test
    void shouldCopyPatchArraysSoThatWritingIntoTheCopyLeavesTheOriginal() {
        PreparedSample original = SampleFixtures.prepared(1, SamplePath.FAST, Shape3.cube(4));
        float[] image = original.patch().image().clone();
        byte[] label = original.patch().label().clone();

        PreparedSample copy = PreparedSampleSerializer.INSTANCE.copy(original);
        copy.patch().image()[5] = 1234f;
        copy.patch().label()[5] = 9;

        assertThat(copy.patch()).isNotSameAs(original.patch());
        assertThat(original.patch().image()).isEqualTo(image);
        assertThat(original.patch().label()).isEqualTo(label);
    }

    @Test
    void shouldCopyEverySampleOfABatchDeeply() {
        Batch original = SampleFixtures.batch(0, 1, 2);
        Batch copy = BatchSerializer.INSTANCE.copy(original);

        copy.samples().get(1).patch().image()[3] = -1e9f;

        assertThat(SampleFixtures.sameContent(original, SampleFixtures.batch(0, 1, 2))).isTrue();
    }

    @Test
    void shouldCopyAPreparationSoThatAdvancingTheCopyLeavesTheOriginal() {
        UnfinishedSample original = SampleFixtures.unfinished(2, Step.CROP);
        byte[] before = SampleFixtures.bytes(((Preparation) original.steps()));

        UnfinishedSample copy = UnfinishedSampleSerializer.INSTANCE.copy(original);
        Preparation copied = SampleFixtures.resumed(copy);
        finish(copied);

        assertThat(copied).isNotSameAs(original.steps());
        assertThat(((Preparation) original.steps()).step()).isEqualTo(Step.CROP);
        assertThat(SampleFixtures.bytes(((Preparation) original.steps()))).isEqualTo(before);
    }

    @Test
    void shouldStreamCopySerializedRecordsByteForByte() throws IOException {
        assertStreamCopy(SampleTaskSerializer.INSTANCE, SampleFixtures.task(1));
        assertStreamCopy(SamplePathSerializer.INSTANCE, SamplePath.FAST);
        assertStreamCopy(PatchSerializer.INSTANCE, SampleFixtures.patch(Shape3.cube(5), 2));
        assertStreamCopy(
                PreparedSampleSerializer.INSTANCE,
                SampleFixtures.prepared(4, SamplePath.SLOW, Shape3.cube(6)));
        assertStreamCopy(
                UnfinishedSampleSerializer.INSTANCE, SampleFixtures.unfinished(5, Step.NOISE));
        assertStreamCopy(BatchSerializer.INSTANCE, SampleFixtures.batch(1, 2, 3));
        assertStreamCopy(
                BatchSerializer.INSTANCE,
                SampleFixtures.heldBack(SampleFixtures.batch(1, 2, 3), 42));
    }

    @Test
    void shouldRestoreTheSameSerializerFromAWrittenSnapshot() throws IOException {
        for (TypeSerializer<?> serializer : ALL) {
            assertSnapshotRestores(serializer);
        }
    }

    @Test
    void shouldDuplicateToAnEqualSerializerBecauseNoneHoldsState() {
        for (TypeSerializer<?> serializer : ALL) {
            assertThat(serializer.duplicate()).isEqualTo(serializer).isSameAs(serializer);
        }
    }

    @Test
    void shouldRejectCorruptInputWithAnIOException() throws IOException {
        assertThatThrownBy(() -> deserialize(SamplePathSerializer.INSTANCE, new byte[] {7}))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("ordinal 7");

        DataOutputSerializer badShape = new DataOutputSerializer(16);
        badShape.writeInt(4);
        badShape.writeInt(0);
        badShape.writeInt(4);
        assertThatThrownBy(() -> deserialize(PatchSerializer.INSTANCE, badShape.getCopyOfBuffer()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("4x0x4");

        DataOutputSerializer badTarget = new DataOutputSerializer(16);
        badTarget.writeInt(2);
        badTarget.writeInt(2);
        badTarget.writeInt(2);
        badTarget.writeInt(-1);
        assertThatThrownBy(() -> deserialize(PatchSerializer.INSTANCE, badTarget.getCopyOfBuffer()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("target of -1 bytes");

        DataOutputSerializer badState = new DataOutputSerializer(64);
        SampleTaskSerializer.INSTANCE.serialize(SampleFixtures.task(1), badState);
        badState.writeLong(0);
        badState.writeByte(UnfinishedSampleSerializer.INLINE);
        badState.writeInt(-5);
        assertThatThrownBy(
                        () ->
                                deserialize(
                                        UnfinishedSampleSerializer.INSTANCE,
                                        badState.getCopyOfBuffer()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("-5 bytes");

        DataOutputSerializer badBatch = new DataOutputSerializer(16);
        badBatch.writeInt(0);
        badBatch.writeLong(0);
        badBatch.writeInt(-3);
        assertThatThrownBy(() -> deserialize(BatchSerializer.INSTANCE, badBatch.getCopyOfBuffer()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("-3 samples");

        DataOutputSerializer badHold = new DataOutputSerializer(32);
        badHold.writeInt(BatchSerializer.HELD_BACK);
        badHold.writeInt(0);
        badHold.writeLong(0);
        badHold.writeLong(-8);
        badHold.writeInt(0);
        assertThatThrownBy(() -> deserialize(BatchSerializer.INSTANCE, badHold.getCopyOfBuffer()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("held back for -8 ns");

        DataOutputSerializer badDevice = new DataOutputSerializer(16);
        badDevice.writeInt(-2);
        badDevice.writeLong(0);
        badDevice.writeInt(0);
        assertThatThrownBy(() -> deserialize(BatchSerializer.INSTANCE, badDevice.getCopyOfBuffer()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("device -2");
    }

    private static Patch finish(Preparation p) {
        Volume v = SampleFixtures.volume();
        while (!p.isDone()) {
            p.advance(v, SampleFixtures.CONFIG);
        }
        return p.result();
    }

    /** Round trip through Flink's own views; the reader must consume exactly what was written. */
    private static <T> T assertRoundTrip(TypeSerializer<T> serializer, T value) throws IOException {
        T back = deserialize(serializer, serialize(serializer, value));
        assertThat(SampleFixtures.sameContent(back, value))
                .as("%s round trip of %s", serializer.getClass().getSimpleName(), value)
                .isTrue();
        return back;
    }

    private static <T> void assertStreamCopy(TypeSerializer<T> serializer, T value)
            throws IOException {
        DataOutputSerializer original = new DataOutputSerializer(1024);
        serializer.serialize(value, original);
        serializer.serialize(value, original);
        DataInputDeserializer in = new DataInputDeserializer(original.getCopyOfBuffer());
        // A small start, so that the copy must grow the target as a record writer's would.
        DataOutputSerializer copied = new DataOutputSerializer(16);
        serializer.copy(in, copied);
        serializer.copy(in, copied);
        assertThat(in.available()).isZero();
        assertThat(copied.getCopyOfBuffer()).isEqualTo(original.getCopyOfBuffer());
    }

    private static <T> void assertSnapshotRestores(TypeSerializer<T> serializer)
            throws IOException {
        TypeSerializerSnapshot<T> snapshot = serializer.snapshotConfiguration();
        DataOutputSerializer out = new DataOutputSerializer(64);
        TypeSerializerSnapshot.writeVersionedSnapshot(out, snapshot);
        TypeSerializerSnapshot<T> read =
                TypeSerializerSnapshot.readVersionedSnapshot(
                        new DataInputDeserializer(out.getCopyOfBuffer()),
                        SampleSerializersTest.class.getClassLoader());

        assertThat(read).isInstanceOf(snapshot.getClass());
        assertThat(read.restoreSerializer()).isEqualTo(serializer);
        assertThat(snapshot.resolveSchemaCompatibility(read).isCompatibleAsIs())
                .as("%s compatible with its own snapshot", serializer.getClass().getSimpleName())
                .isTrue();
    }

    private static <T> byte[] serialize(TypeSerializer<T> serializer, T value) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(1024);
        serializer.serialize(value, out);
        return out.getCopyOfBuffer();
    }

    private static <T> T deserialize(TypeSerializer<T> serializer, byte[] bytes)
            throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(bytes);
        T value = serializer.deserialize(in);
        assertThat(in.available()).as("bytes left after deserializing").isZero();
        return value;
    }
}
