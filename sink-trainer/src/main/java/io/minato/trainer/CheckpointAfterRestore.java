package io.minato.trainer;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.checkpoint.CheckpointFailureReason;
import org.apache.flink.runtime.checkpoint.CompletedCheckpoint;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.util.ExceptionUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks Flink for a checkpoint as soon as every restored trainer runs, rather than at the next
 * periodic one. After a restore, Flink's periodic trigger fails while any task still initializes (a
 * trainer loads its native libraries and model for a second or two) and tries again only an
 * interval later: on average half an interval lost, a whole one at worst. A run is exposed to a
 * second failure until it checkpoints again, and a device's work since the restore would be
 * repeated.
 *
 * <p>Part of the trainers' coordinator in the JobManager: the trainer subtasks that Flink reset
 * each say once that their task runs ({@link Running}); when the last one has, this triggers a
 * checkpoint through the job's {@link CheckpointCoordinator}, as a manual trigger over REST would.
 * A task of the preparation may still initialize then: the trigger is tried again every {@link
 * #RETRY} while Flink answers that not every task runs, for {@link #GIVE_UP} at most, after which
 * the periodic checkpoints go on as ever.
 */
final class CheckpointAfterRestore {
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointAfterRestore.class);

    static final Duration RETRY = Duration.ofMillis(100);
    static final Duration GIVE_UP = Duration.ofSeconds(10);

    /** What a trainer subtask sends its coordinator once its task runs. */
    record Running() implements OperatorEvent {}

    private final Supplier<CheckpointCoordinator> checkpoints; // null inside: not checkpointing
    private final IntSupplier subtasks;
    private final Executor retryLater;

    // Guarded by this.
    private final Set<Integer> restoring = new HashSet<>();
    private boolean wanted; // a restore awaits its first checkpoint
    private long restore; // counts restores: a later one makes an earlier one's retries stop

    /**
     * @param checkpoints the job's checkpoint coordinator when asked (null when the job takes no
     *     checkpoints); Flink gives it to an operator coordinator's context only once the job is
     *     set up
     * @param subtasks how many trainer subtasks the job has now
     */
    CheckpointAfterRestore(Supplier<CheckpointCoordinator> checkpoints, IntSupplier subtasks) {
        this(
                checkpoints,
                subtasks,
                CompletableFuture.delayedExecutor(RETRY.toMillis(), TimeUnit.MILLISECONDS));
    }

    CheckpointAfterRestore(
            Supplier<CheckpointCoordinator> checkpoints,
            IntSupplier subtasks,
            Executor retryLater) {
        this.checkpoints = checkpoints;
        this.subtasks = subtasks;
        this.retryLater = retryLater;
    }

    /**
     * Flink reset trainer {@code subtask} to a checkpoint, or to the start without one (a failover
     * of the tasks around it).
     */
    synchronized void reset(int subtask) {
        restoring.add(subtask);
        wanted = true;
        restore++;
    }

    /** Flink reset every trainer (a global failover, or a run resumed from a checkpoint). */
    synchronized void resetAll() {
        for (int s = 0; s < subtasks.getAsInt(); s++) {
            restoring.add(s);
        }
        wanted = true;
        restore++;
    }

    /** Trainer {@code subtask}'s task runs: the last of a restore's asks for the checkpoint. */
    void running(int subtask) {
        long ask;
        synchronized (this) {
            restoring.remove(subtask);
            if (!wanted || !restoring.isEmpty()) {
                return;
            }
            wanted = false;
            ask = restore;
        }
        trigger(ask, System.nanoTime() + GIVE_UP.toNanos());
    }

    private void trigger(long ask, long deadline) {
        CheckpointCoordinator coordinator;
        synchronized (this) {
            coordinator = ask == restore ? checkpoints.get() : null;
        }
        if (coordinator == null
                || coordinator.isShutdown()
                || !coordinator.isPeriodicCheckpointingConfigured()) {
            return; // a job that takes no checkpoints gets none from here either
        }
        CompletableFuture<CompletedCheckpoint> done;
        try {
            done = coordinator.triggerCheckpoint(CheckpointType.CONFIGURED);
        } catch (RuntimeException e) {
            LOG.debug("could not ask for a checkpoint after a restore", e);
            return;
        }
        done.whenComplete(
                (checkpoint, failure) -> {
                    if (failure == null) {
                        LOG.info(
                                "Checkpoint {} completed, asked for as the restored trainers ran",
                                checkpoint.getCheckpointID());
                    } else if (notAllRunning(failure) && System.nanoTime() < deadline) {
                        retryLater.execute(() -> trigger(ask, deadline));
                    } else {
                        LOG.debug("the checkpoint asked for after a restore failed", failure);
                    }
                });
    }

    private static boolean notAllRunning(Throwable failure) {
        return ExceptionUtils.findThrowable(failure, CheckpointException.class)
                .map(e -> e.getCheckpointFailureReason())
                .filter(r -> r == CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING)
                .isPresent();
    }
}
