package io.minato.loader.pacing;

import org.apache.flink.runtime.operators.coordination.CoordinatorStore;

/**
 * The latest failure of a subtask that any of the job's coordinators heard of, in the JobManager: a
 * coordinator hears only of its own operator's subtasks, and the one that stops the job for failing
 * too often names the failure, wherever it was.
 */
public final class LastFailure {
    /** Its key in the job's coordinator store. */
    static final String KEY = "minato.last-failure";

    private volatile Throwable last;

    /** The job's, made by whichever coordinator comes first. */
    public static LastFailure in(CoordinatorStore store) {
        return (LastFailure)
                store.compute(KEY, (key, old) -> old != null ? old : new LastFailure());
    }

    /** A subtask failed for {@code reason} (null: not known, ignored). */
    public void failed(Throwable reason) {
        if (reason != null) {
            last = reason;
        }
    }

    /** The latest failure; null before any. */
    public Throwable last() {
        return last;
    }
}
