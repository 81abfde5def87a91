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
}
