package io.minato.loader.pacing;

import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * A trainer's batch queue, as its subtask tells the job: device {@code device} holds {@code held}
 * of {@code depth} batches (the one in training included).
 */
public record QueueReport(int device, int held, int depth) implements OperatorEvent {
    /** Whether the queue has room: the device waits for a batch, or is about to. */
    public boolean roomy() {
        return held < depth;
    }

    /** A later report replaces it. */
    @Override
    public boolean isLossTolerant() {
        return true;
    }
}
