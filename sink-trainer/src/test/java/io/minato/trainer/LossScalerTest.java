package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import org.junit.jupiter.api.Test;

/** The loss scale on the device against PyTorch's GradScaler's rule. */
class LossScalerTest {

    @Test
    void shouldHalveAtEachOverflowAndDoubleAfterTheIntervalWithout() {
        try (NDManager manager = NDManager.newBaseManager()) {
            LossScaler scaler = new LossScaler(manager, 3);
            NDArray finite = manager.create(new float[] {1f, -2f, 3e4f});
            NDArray infinite = manager.create(new float[] {1f, Float.NEGATIVE_INFINITY});
            NDArray nan = manager.create(new float[] {Float.NaN, 0f});
            float expected = LossScaler.INITIAL_SCALE;
            // GradScaler: halve and restart the count at an overflow; double after 3 in a row.
            String script = "ffxfffffnffx";
            int inARow = 0;
            for (char c : script.toCharArray()) {
                NDArray gradient = c == 'f' ? finite : c == 'x' ? infinite : nan;
                try (NDManager scope = manager.newSubManager()) {
                    NDArray overflowed = scaler.overflowed(gradient, scope);
                    assertThat(overflowed.getBoolean()).isEqualTo(c != 'f');
                    scaler.update(overflowed, scope);
                }
                if (c == 'f') {
                    if (++inARow == 3) {
                        expected *= 2;
                        inARow = 0;
                    }
                } else {
                    expected /= 2;
                    inARow = 0;
                }
                assertThat(scaler.scale()).as("after %s", c).isEqualTo(expected);
                assertThat(scaler.values()[1]).isEqualTo(inARow);
            }
            assertThat(expected).isNotEqualTo(LossScaler.INITIAL_SCALE);
        }
    }

    @Test
    void shouldDivideTheGradientByTheScaleInFloat32AndRestoreACheckpointedScale() {
        try (NDManager manager = NDManager.newBaseManager()) {
            LossScaler scaler = new LossScaler(manager, 2000);
            NDArray scaled =
                    manager.create(new float[] {32768f, -16384f})
                            .toType(ai.djl.ndarray.types.DataType.FLOAT16, false);
            try (NDManager scope = manager.newSubManager()) {
                NDArray g = scaler.unscale(scaled, scope);
                assertThat(g.getDataType()).isEqualTo(ai.djl.ndarray.types.DataType.FLOAT32);
                assertThat(g.toFloatArray()).containsExactly(0.5f, -0.25f);
            }
            scaler.restore(1024f, 7f);
            assertThat(scaler.values()).containsExactly(1024f, 7f);
            assertThatThrownBy(() -> scaler.restore(0f, 0f))
                    .hasMessage("the checkpoint's loss scale is 0.0 after 0.0 steps");
        }
    }
}
