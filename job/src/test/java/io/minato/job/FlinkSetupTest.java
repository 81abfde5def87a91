package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.CheckpointConfig;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FlinkSetupTest {
    @TempDir Path run;

    /** As Flink reads the job's configuration: a typo in a key would leave Flink's default. */
    private CheckpointConfig checkpoints(Duration interval) {
        Configuration c = FlinkSetup.jobConfiguration(run, interval, 3);
        return StreamExecutionEnvironment.getExecutionEnvironment(c).getCheckpointConfig();
    }

    @Test
    void shouldFailACheckpointPendingForThreeIntervals() {
        CheckpointConfig c = checkpoints(Duration.ofSeconds(20));
        assertThat(c.getCheckpointInterval()).isEqualTo(20_000);
        assertThat(c.getCheckpointTimeout()).isEqualTo(60_000);
    }

    @Test
    void shouldGiveShortIntervalsTheLeastTimeout() {
        assertThat(checkpoints(Duration.ofSeconds(2)).getCheckpointTimeout()).isEqualTo(10_000);
        assertThat(checkpoints(Duration.ofMillis(100)).getCheckpointTimeout()).isEqualTo(10_000);
        assertThat(FlinkSetup.checkpointTimeout(Duration.ofSeconds(4)))
                .isEqualTo(Duration.ofSeconds(12));
    }

    @Test
    void shouldGoOnAfterAFewFailedCheckpointsInARow() {
        assertThat(checkpoints(Duration.ofSeconds(2)).getTolerableCheckpointFailureNumber())
                .isEqualTo(3);
    }

    /**
     * Flink's own count of restarts is unbounded; the trainers' coordinator counts failures since
     * the last completed checkpoint (TrainerCoordinatorTest). 0 restarts: none at all.
     */
    @Test
    void shouldLeaveTheCountOfRestartsToTheTrainersCoordinator() {
        Configuration c = FlinkSetup.jobConfiguration(run, Duration.ofSeconds(2), 3);
        assertThat(c.toMap())
                .containsEntry("restart-strategy.type", "exponential-delay")
                .containsEntry(
                        "restart-strategy.exponential-delay.attempts-before-reset-backoff",
                        Integer.toString(Integer.MAX_VALUE));
        assertThat(FlinkSetup.jobConfiguration(run, Duration.ofSeconds(2), 0).toMap())
                .containsEntry("restart-strategy.type", "none");
    }
}
