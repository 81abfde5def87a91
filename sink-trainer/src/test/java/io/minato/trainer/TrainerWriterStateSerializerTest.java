package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

class TrainerWriterStateSerializerTest {

    private final TrainerWriterStateSerializer serializer = new TrainerWriterStateSerializer();

    @Test
    void shouldRoundTripQueuedBatchesCountersModelAndTraceLength() throws Exception {
        List<Batch> queued =
                List.of(
                        TestBatches.batch(3, 7, SamplePath.SLOW, SamplePath.FAST, SamplePath.FAST),
                        TestBatches.batch(3, 8));
        DeviceCounters counters =
                new DeviceCounters(
                        7,
                        10,
                        4,
                        123_456_789,
                        987_654,
                        321_000,
                        0.9,
                        0.25,
                        1_700_000,
                        1_800_000,
                        1_750_000,
                        9);
        TrainerWriterState state =
                new TrainerWriterState(3, queued, counters, new byte[] {1, 2, 3}, 4242);

        TrainerWriterState back =
                serializer.deserialize(serializer.getVersion(), serializer.serialize(state));

        assertThat(back.device()).isEqualTo(3);
        assertThat(back.counters()).isEqualTo(counters);
        assertThat(back.consumerState()).containsExactly(1, 2, 3);
        assertThat(back.traceLength()).isEqualTo(4242);
        assertThat(back.queued()).hasSize(2);
        for (int b = 0; b < queued.size(); b++) {
            Batch expected = queued.get(b);
            Batch actual = back.queued().get(b);
            assertThat(actual.device()).isEqualTo(expected.device());
            assertThat(actual.sequence()).isEqualTo(expected.sequence());
            assertThat(actual.samples()).hasSameSizeAs(expected.samples());
            for (int i = 0; i < expected.samples().size(); i++) {
                PreparedSample e = expected.samples().get(i);
                PreparedSample a = actual.samples().get(i);
                assertThat(a.task()).isEqualTo(e.task());
                assertThat(a.path()).isEqualTo(e.path());
                assertThat(a.prepCpuNanos()).isEqualTo(e.prepCpuNanos());
                assertThat(a.patch()).as("a checkpoint keeps the identity only").isNull();
            }
            Batch prepared = TestBatches.RECIPE.materialize(actual);
            for (int i = 0; i < expected.samples().size(); i++) {
                assertThat(
                                prepared.samples()
                                        .get(i)
                                        .patch()
                                        .sameContent(expected.samples().get(i).patch()))
                        .as("prepared again from its identity, bit-identical")
                        .isTrue();
            }
        }
    }

    @Test
    void shouldRestoreQueuedBatchesAsHeldBackForNoTime() throws IOException {
        Batch b = TestBatches.batch(1, 4);
        Batch held = new Batch(b.device(), b.sequence(), b.samples(), 3_000_000);
        TrainerWriterState state =
                new TrainerWriterState(1, List.of(held), DeviceCounters.ZERO, new byte[0], 0);
        TrainerWriterState back =
                serializer.deserialize(serializer.getVersion(), serializer.serialize(state));
        assertThat(back.queued()).singleElement().extracting(Batch::heldBackNanos).isEqualTo(0L);
    }

    @Test
    void shouldRoundTripAnEmptyStateWithNaNLosses() throws IOException {
        TrainerWriterState state =
                new TrainerWriterState(0, List.of(), DeviceCounters.ZERO, new byte[0], 0);
        TrainerWriterState back =
                serializer.deserialize(serializer.getVersion(), serializer.serialize(state));
        assertThat(back.queued()).isEmpty();
        assertThat(back.counters()).isEqualTo(DeviceCounters.ZERO);
    }

    @Test
    void shouldRefuseAnUnknownVersionAndTrailingBytes() throws IOException {
        TrainerWriterState state =
                new TrainerWriterState(0, List.of(), DeviceCounters.ZERO, new byte[0], 0);
        byte[] bytes = serializer.serialize(state);
        assertThatThrownBy(() -> serializer.deserialize(99, bytes))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("format version 99");
        byte[] longer = java.util.Arrays.copyOf(bytes, bytes.length + 1);
        assertThatThrownBy(() -> serializer.deserialize(serializer.getVersion(), longer))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("trailing");
    }

    /**
     * A checkpoint of the previous build (version 3) resumes: its wait had no head-of-line part.
     */
    @Test
    void shouldReadAVersion3StateAsNoHeadOfLineWait() throws IOException {
        DeviceCounters counters =
                new DeviceCounters(5, 8, 2, 1_000, 2_000, 700, 0.5, 0.25, 10, 20, 15, 6);
        TrainerWriterState state =
                new TrainerWriterState(1, List.of(), counters, new byte[] {9}, 77);
        byte[] v4 = serializer.serialize(state);
        // Version 3 wrote the same fields without the head-of-line nanos after the wait: device,
        // batch count, then steps, fast, slow, busy and wait (5 longs) come first.
        int at = 4 + 4 + 5 * 8;
        byte[] v3 = new byte[v4.length - 8];
        System.arraycopy(v4, 0, v3, 0, at);
        System.arraycopy(v4, at + 8, v3, at, v4.length - at - 8);

        TrainerWriterState back = serializer.deserialize(3, v3);

        assertThat(back.counters())
                .isEqualTo(new DeviceCounters(5, 8, 2, 1_000, 2_000, 0, 0.5, 0.25, 10, 20, 15, 6));
        assertThat(back.consumerState()).containsExactly(9);
        assertThat(back.traceLength()).isEqualTo(77);
    }
}
