package io.minato.trainer.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServedSetTest {

    @Test
    void shouldServeAgainWhatTheProcessLacksAndNothingItHas() {
        ServedSet served = new ServedSet();
        for (long i = 0; i < 10; i++) {
            served.add(0, i);
        }
        served.add(1, 3);
        ServedSet consumed = new ServedSet();
        for (long i = 0; i < 6; i++) {
            consumed.add(0, i);
        }
        consumed.add(2, 1); // a job restored from before it served this one

        assertThat(served.minus(consumed))
                .containsExactly(
                        new long[] {0, 6},
                        new long[] {0, 7},
                        new long[] {0, 8},
                        new long[] {0, 9},
                        new long[] {1, 3});
        served.addAll(consumed);
        assertThat(served.contains(2, 1)).isTrue();
        assertThat(served.size()).isEqualTo(12);
    }

    @Test
    void shouldRoundTripThroughTheWireAndACheckpoint() throws Exception {
        ServedSet set = new ServedSet();
        set.add(0, 0);
        set.add(0, 9);
        set.add(3, 1000);
        // Bit i of byte i / 8, least significant first: what NumPy's unpackbits(bitorder="little")
        // and the Python package read; on the wire zlib-compressed, and plain base64 read too.
        assertThat(set.toWire().get("0")).startsWith("z:");
        assertThat(ServedSet.fromWire(set.toWire())).isEqualTo(set);
        ServedSet plain = ServedSet.fromWire(Map.of("0", "AQI="));
        assertThat(plain.contains(0, 0) && plain.contains(0, 9)).isTrue();
        assertThat(plain.size()).isEqualTo(2);
        assertThat(ServedSet.readFrom(new DataInputStream(new ByteArrayInputStream(set.toBytes()))))
                .isEqualTo(set);
        set.remove(3, 1000);
        assertThat(set.contains(3, 1000)).isFalse();
    }

    @Test
    void shouldKeepAFinishedEpochInAFewHundredBytesWhateverItsSize() throws Exception {
        // Rank 3 of 8 over epochs of a million samples, the last epoch half served.
        ServedSet set = new ServedSet();
        for (int e = 0; e < 10; e++) {
            for (long i = 3; i < (e < 9 ? 1_000_000 : 500_000); i += 8) {
                set.add(e, i);
            }
        }
        byte[] checkpoint = set.toBytes();
        // 10 raw bitmaps would be 1.2 MB; compressed, a finished epoch takes a few hundred bytes.
        assertThat(checkpoint.length).isLessThan(10 * 1000);
        ServedSet back =
                ServedSet.readFrom(new DataInputStream(new ByteArrayInputStream(checkpoint)));
        assertThat(back).isEqualTo(set);
        assertThat(ServedSet.fromWire(set.toWire())).isEqualTo(set);
        // A change to an epoch is in the next checkpoint, not its older compressed form.
        back.add(9, 500_003);
        ServedSet again =
                ServedSet.readFrom(new DataInputStream(new ByteArrayInputStream(back.toBytes())));
        assertThat(again.contains(9, 500_003)).isTrue();
        assertThat(again.size()).isEqualTo(set.size() + 1);
    }

    @Test
    void shouldReadACheckpointOfRawBitmaps() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(1); // the format before compression
        out.writeInt(1);
        out.writeInt(4);
        out.writeInt(2);
        out.write(new byte[] {1, 2});
        ServedSet set =
                ServedSet.readFrom(
                        new DataInputStream(new ByteArrayInputStream(bytes.toByteArray())));
        assertThat(set.contains(4, 0) && set.contains(4, 9)).isTrue();
        assertThat(set.size()).isEqualTo(2);
    }

    @Test
    void shouldRefuseMalformedConsumedSamplesInOneLine() {
        assertThatThrownBy(() -> ServedSet.fromWire(Map.of("x", "AQI=")))
                .hasMessage("consumed samples: epoch 'x' is not a number");
        assertThatThrownBy(() -> ServedSet.fromWire(Map.of("1", List.of())))
                .hasMessage("consumed samples of epoch 1: expected a base64 bitmap");
        assertThatThrownBy(() -> ServedSet.fromWire(Map.of("1", "not base64!")))
                .hasMessageStartingWith("consumed samples of epoch 1: not base64:")
                .hasMessageNotContaining("\n");
        assertThatThrownBy(() -> ServedSet.fromWire(Map.of("2", "z:AQI=")))
                .hasMessageStartingWith(
                        "consumed samples of epoch 2: not a zlib-compressed bitmap:")
                .hasMessageNotContaining("\n");
    }
}
