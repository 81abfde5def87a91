package io.minato.loader.pacing;

import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * The trainers' coordinator: keeps each device's latest {@link QueueReport} in the job's {@link
 * DeviceQueues}. It holds nothing a checkpoint needs; after a restore the trainers report again.
 */
public final class QueueCoordinator extends StatelessCoordinator {
    private final DeviceQueues queues;

    private QueueCoordinator(Context context) {
        this.queues = DeviceQueues.in(context.getCoordinatorStore());
    }

    @Override
    public void handleEventFromOperator(int subtask, int attempt, OperatorEvent event) {
        if (event instanceof QueueReport report) {
            queues.report(report);
        }
    }

    /** Makes the coordinator of the trainer operator {@code operator}. */
    public static OperatorCoordinator.Provider provider(OperatorID operator) {
        return new Provider(operator, QueueCoordinator::new);
    }
}
