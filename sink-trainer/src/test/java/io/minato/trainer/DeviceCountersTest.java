package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.SamplePath;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The counters after each step, the first epoch's end among them. */
class DeviceCountersTest {

    @Test
    void shouldMarkTheEndOfTheLastStepThatHeldAFirstEpochSample() {
        Batch epoch0 = batch(0, 0, 0, 0);
        Batch mixed = batch(1, 0, 1, 1); // a loader running ahead: epoch 1 before epoch 0 ends
        Batch epoch1 = batch(2, 1, 1, 2);

        DeviceCounters c = DeviceCounters.ZERO.plusStep(epoch0, step(), 0, 0, 1_000, 1_100);
        assertThat(c.firstEpochEndMillis()).isEqualTo(1_100);
        assertThat(c.samplesAtFirstEpochEnd()).isEqualTo(2);

        c = c.plusStep(mixed, step(), 0, 0, 1_100, 1_200);
        assertThat(c.firstEpochEndMillis()).isEqualTo(1_200);
        assertThat(c.samplesAtFirstEpochEnd()).isEqualTo(4);

        c = c.plusStep(epoch1, step(), 0, 0, 1_200, 1_300);
        assertThat(c.firstEpochEndMillis()).as("epoch 1 only: unchanged").isEqualTo(1_200);
        assertThat(c.samplesAtFirstEpochEnd()).isEqualTo(4);
        assertThat(c.samples()).isEqualTo(6);
        assertThat(c.lastStepEndMillis()).isEqualTo(1_300);
    }

    @Test
    void shouldLeaveTheFirstEpochUnmarkedWhenNoStepHeldOne() {
        DeviceCounters c =
                DeviceCounters.ZERO.plusStep(batch(0, 1, 2, 2), step(), 0, 0, 1_000, 1_100);
        assertThat(c.firstEpochEndMillis()).isZero();
        assertThat(c.samplesAtFirstEpochEnd()).isZero();
    }

    private static Batch batch(long sequence, int epochA, int epochB, long index) {
        return new Batch(
                0,
                sequence,
                List.of(
                        TestBatches.sample(epochA, 2 * index, 0, SamplePath.FAST),
                        TestBatches.sample(epochB, 2 * index + 1, 1, SamplePath.SLOW)));
    }

    private static StepResult step() {
        return StepResult.noLoss(1_000);
    }
}
