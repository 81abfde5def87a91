package io.minato.loader.pacing;

import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;

/**
 * The coordinator of an operator that needs none but whose failures the job must be able to name:
 * it notes each failure of its subtasks in the job's {@link LastFailure}, which the trainers'
 * coordinator names when it stops a job that fails too often.
 */
public final class FailureWitness extends StatelessCoordinator {
    private final LastFailure failures;

    private FailureWitness(Context context) {
        this.failures = LastFailure.in(context.getCoordinatorStore());
    }

    @Override
    public void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        failures.failed(reason);
    }

    /** Makes the coordinator of operator {@code operator}. */
    public record Provider(OperatorID operator) implements OperatorCoordinator.Provider {
        @Override
        public OperatorID getOperatorId() {
            return operator;
        }

        @Override
        public OperatorCoordinator create(Context context) {
            return new FailureWitness(context);
        }
    }
}
