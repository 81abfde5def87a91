package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SimulatedAcceleratorTest {

    @Test
    void shouldParseTheStepTimeInMilliseconds() {
        assertThat(SimulatedAccelerator.parse("simulated:50").stepMillis()).isEqualTo(50);
        assertThat(SimulatedAccelerator.parse("simulated:0").stepMillis()).isZero();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {"simulated", "simulated:", "simulated:-1", "simulated:5ms", "sim:5", ""})
    void shouldRefuseABadSpecWithOneLineSayingWhatIsExpected(String spec) {
        assertThatThrownBy(() -> SimulatedAccelerator.parse(spec))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("bad accelerator '" + spec + "': ")
                .hasMessageContaining("simulated:")
                .hasMessageNotContaining("\n");
    }

    @Test
    void shouldSleepForTheStepTimeAndReportItAsBusyWithoutLoss() throws Exception {
        try (Accelerator a = SimulatedAccelerator.parse("simulated:30").create(0, 1)) {
            StepResult r = a.train(TestBatches.batch(0, 0));
            assertThat(r.busyNanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(30));
            assertThat(r.loss()).isNaN();
            assertThat(a.kind()).isEqualTo("simulated");
            assertThat(a.snapshot()).isEmpty();
        }
    }
}
