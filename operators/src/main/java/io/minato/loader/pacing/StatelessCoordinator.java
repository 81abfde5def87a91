package io.minato.loader.pacing;

import java.io.Serializable;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * A coordinator that holds nothing a checkpoint needs: its checkpoints are empty, and a restore or
 * a subtask's reset changes nothing (the subtasks tell it again). Subclasses override what they
 * use.
 */
public abstract class StatelessCoordinator implements OperatorCoordinator {
    @Override
    public void start() {}

    @Override
    public void close() {}

    @Override
    public void handleEventFromOperator(int subtask, int attempt, OperatorEvent event) {}

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

    /** Makes a coordinator in its context; sent to the JobManager with the job. */
    public interface Maker extends Serializable {
        OperatorCoordinator create(Context context);
    }

    /** The provider of the coordinators of operator {@code operator} that {@code maker} makes. */
    public record Provider(OperatorID operator, Maker maker)
            implements OperatorCoordinator.Provider {
        @Override
        public OperatorID getOperatorId() {
            return operator;
        }

        @Override
        public OperatorCoordinator create(Context context) {
            return maker.create(context);
        }
    }
}
