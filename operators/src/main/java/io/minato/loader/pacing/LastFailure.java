package io.minato.loader.pacing;

import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.CoordinatorStore;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;

/**
 * The latest failure of a subtask that any of the job's coordinators heard of, in the JobManager: a
 * coordinator hears only of its own operator's subtasks, and the one that stops the job for failing
 * too often names the failure, wherever it was.
 *
 * <p>A failure that only follows another is not kept over it: when a task fails while a
 * coordinator's event to it is under way (a source's split, say), Flink may fail the task for the
 * lost event before it hears the task's own failure, which it then drops. The failure to name is
 * the one before, the task's own in an earlier attempt.
 */
public final class LastFailure {
    /** Its key in the job's coordinator store. */
    static final String KEY = "minato.last-failure";

    /** How Flink's {@code SubtaskGatewayImpl} begins the failure of a task it lost an event to. */
    static final String LOST_EVENT =
            "An OperatorEvent from an OperatorCoordinator to a task was lost";

    private volatile Throwable last;

    /** The job's, made by whichever coordinator comes first. */
    public static LastFailure in(CoordinatorStore store) {
        return (LastFailure)
                store.compute(KEY, (key, old) -> old != null ? old : new LastFailure());
    }

    /**
     * The coordinator of an operator that needs none but whose failures the job must be able to
     * name (a baseline's loader): it notes each failure of its subtasks here.
     */
    public static OperatorCoordinator.Provider witness(OperatorID operator) {
        return new StatelessCoordinator.Provider(
                operator,
                context ->
                        new StatelessCoordinator() {
                            private final LastFailure failures = in(context.getCoordinatorStore());

                            @Override
                            public void executionAttemptFailed(
                                    int subtask, int attempt, Throwable reason) {
                                failures.failed(reason);
                            }
                        });
    }

    /**
     * A subtask failed for {@code reason} (null: not known, ignored; a lost event: kept only while
     * no other failure is known).
     */
    public void failed(Throwable reason) {
        if (reason != null && (last == null || !lostEvent(reason))) {
            last = reason;
        }
    }

    /** Whether {@code reason} is a task failed by Flink for an event it could not deliver. */
    static boolean lostEvent(Throwable reason) {
        for (Throwable t = reason; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (String.valueOf(t.getMessage()).contains(LOST_EVENT)) {
                return true;
            }
        }
        return false;
    }

    /** The latest failure; null before any. */
    public Throwable last() {
        return last;
    }
}
