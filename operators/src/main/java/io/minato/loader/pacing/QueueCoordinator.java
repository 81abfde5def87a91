package io.minato.loader.pacing;

import java.util.concurrent.CompletableFuture;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * The trainers' coordinator: keeps each device's latest {@link QueueReport} in the job's {@link
 * DeviceQueues}. It holds nothing a checkpoint needs; after a restore the trainers report again.
 */
public final class QueueCoordinator implements OperatorCoordinator {
    private final DeviceQueues queues;

    private QueueCoordinator(Context context) {
        this.queues = DeviceQueues.in(context.getCoordinatorStore());
    }

    @Override
    public void start() {}

    @Override
    public void close() {}

    @Override
    public void handleEventFromOperator(int subtask, int attempt, OperatorEvent event) {
        if (event instanceof QueueReport report) {
            queues.report(report);
        }
    }

    @Override
    public void checkpointCoordinator(long checkpointId, CompletableFuture<byte[]> result) {
        result.complete(new byte[0]);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {}

    @Override
    public void resetToCheckpoint(long checkpointId, byte[] checkpointData) {}

    @Override
    public void subtaskReset(int subtask, long checkpointId) {}

    @Override
    public void executionAttemptFailed(int subtask, int attempt, Throwable reason) {}

    @Override
    public void executionAttemptReady(int subtask, int attempt, SubtaskGateway gateway) {}

    /** Makes the coordinator of the trainer operator {@code operator}. */
    public record Provider(OperatorID operator) implements OperatorCoordinator.Provider {
        @Override
        public OperatorID getOperatorId() {
            return operator;
        }

        @Override
        public OperatorCoordinator create(Context context) {
            return new QueueCoordinator(context);
        }
    }
}
