package io.minato.loader.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.data.BadInputException;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.operators.coordination.TaskNotRunningException;
import org.apache.flink.util.FlinkException;
import org.apache.flink.util.SerializedThrowable;
import org.junit.jupiter.api.Test;

class LastFailureTest {
    private final LastFailure failures = new LastFailure();

    /** The failure Flink's SubtaskGatewayImpl gives a task that failed as an event went to it. */
    private static FlinkException lostEvent() {
        return new FlinkException(
                String.format(
                        LastFailure.LOST_EVENT
                                + ". Triggering task failover to ensure consistency. Event: '%s',"
                                + " targetTask: %s",
                        "AddSplitEvents[[[B@1f]]",
                        "Source: tasks -> DjlLoader (1/1) - execution #2"),
                new TaskNotRunningException(
                        "Task is not running, but in state FAILED", ExecutionState.FAILED));
    }

    @Test
    void shouldKeepTheTaskOwnFailureOverALostEventThatFollowsIt() {
        BadInputException bad =
                new BadInputException(
                        java.nio.file.Path.of("/data/a/bad.png"), "cannot decode the image");
        failures.failed(new SerializedThrowable(bad));
        failures.failed(lostEvent());
        failures.failed(null);

        assertThat(failures.last()).hasMessageContaining("/data/a/bad.png: cannot decode");
    }

    @Test
    void shouldNameALostEventWhenNothingElseFailedAndTheNextFailureOverIt() {
        FlinkException lost = lostEvent();
        failures.failed(lost);
        assertThat(failures.last()).isSameAs(lost);

        IllegalStateException next = new IllegalStateException("the trainer failed");
        failures.failed(next);
        assertThat(failures.last()).isSameAs(next);
    }

    @Test
    void shouldTellALostEventByItsMessageAnywhereOnTheChain() {
        assertThat(LastFailure.lostEvent(new RuntimeException("wrapped", lostEvent()))).isTrue();
        assertThat(LastFailure.lostEvent(new SerializedThrowable(lostEvent()))).isTrue();
        assertThat(LastFailure.lostEvent(new TaskNotRunningException("Task is not running")))
                .as("a task that was not running, with no event lost")
                .isFalse();
        assertThat(LastFailure.lostEvent(new IllegalStateException((String) null))).isFalse();
    }
}
