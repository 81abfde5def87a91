package io.minato.loader.pacing;

import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * Every device's batch queue in a few numbers, as the workers' coordinator tells each worker:
 * {@code reported} devices have said how full their queue is, {@code roomy} of them have room.
 */
public record JobQueues(int reported, int roomy) implements OperatorEvent {
    /** Before any trainer reported. */
    public static final JobQueues NONE = new JobQueues(0, 0);

    /** Whether some device reported its queue. */
    public boolean known() {
        return reported > 0;
    }

    /** Whether some device's queue has room. */
    public boolean hungry() {
        return roomy > 0;
    }

    /**
     * A worker that finished (or failed) before this reached it needs it no more, and a later view
     * replaces it anyway: Flink fails a subtask over for a lost event that is not loss-tolerant
     * (seen: a worker FINISHED while its coordinator told it, and the job restarted).
     */
    @Override
    public boolean isLossTolerant() {
        return true;
    }
}
