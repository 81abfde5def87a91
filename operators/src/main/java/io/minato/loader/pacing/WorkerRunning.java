package io.minato.loader.pacing;

import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * A worker subtask's word to its {@link PacingCoordinator}, from its {@code open()}: it runs, and
 * may be told how the queues stand. A subtask that a restore found finished (Flink runs none of its
 * operators' code) never says it, and is never sent an event: its task would fail on one.
 */
public record WorkerRunning() implements OperatorEvent {
    private static final long serialVersionUID = 1L;
}
