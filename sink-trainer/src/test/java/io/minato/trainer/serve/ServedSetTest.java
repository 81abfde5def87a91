package io.minato.trainer.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
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
        // and the Python package read.
        assertThat(set.toWire()).containsEntry("0", "AQI=");
        assertThat(ServedSet.fromWire(set.toWire())).isEqualTo(set);
        assertThat(ServedSet.readFrom(new DataInputStream(new ByteArrayInputStream(set.toBytes()))))
                .isEqualTo(set);
        set.remove(3, 1000);
        assertThat(set.contains(3, 1000)).isFalse();
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
    }
}
