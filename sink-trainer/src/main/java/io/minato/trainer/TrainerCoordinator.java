package io.minato.trainer;

import io.minato.loader.pacing.LastFailure;
import io.minato.loader.pacing.QueueCoordinator;
import java.nio.file.Path;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.CoordinationRequest;
import org.apache.flink.runtime.operators.coordination.CoordinationRequestHandler;
import org.apache.flink.runtime.operators.coordination.CoordinationResponse;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trainers' coordinator in the JobManager: their queue reports go to the job's worker
 * schedulers ({@link QueueCoordinator}), it is where the trainers of a run attempt meet ({@link
 * TrainerRendezvous}) and claim their TaskManagers' GPUs ({@link GpuClaims}), and after a restore
 * it asks for a checkpoint once they run ({@link CheckpointAfterRestore}). It keeps the job's
 * account of checkpoints and restores, and stops the job when it fails too often without
 * checkpointing in between ({@link CheckpointLedger}). It holds nothing a checkpoint needs: after a
 * restore the trainers, a new attempt, meet again.
 */
final class TrainerCoordinator implements OperatorCoordinator, CoordinationRequestHandler {
    /** Attempts remembered: a few, for the requests of an attempt that is still ending. */
    private static final int ATTEMPTS = 16;

    private static final Logger LOG = LoggerFactory.getLogger(TrainerCoordinator.class);

    private final OperatorCoordinator queues;
    private final CheckpointAfterRestore afterRestore;
    private final CheckpointLedger ledger;
    private final Consumer<Throwable> failJob;
    private volatile boolean started;
    private final LastFailure failures;
    private final Map<String, CompletableFuture<TrainerRendezvous.Root>> roots = bounded();
    private final Map<String, TrainerRendezvous.Endings> ended = bounded();
    private final Map<String, GpuClaims> gpus = bounded();

    TrainerCoordinator(
            OperatorCoordinator queues,
            CheckpointAfterRestore afterRestore,
            CheckpointLedger ledger,
            LastFailure failures,
            Consumer<Throwable> failJob) {
        this.queues = queues;
        this.afterRestore = afterRestore;
        this.ledger = ledger;
        this.failures = failures;
        this.failJob = failJob;
    }

    @Override
    public synchronized CompletableFuture<CoordinationResponse> handleCoordinationRequest(
            CoordinationRequest request) {
        if (request instanceof TrainerRendezvous.Announce a) {
            root(a.group()).complete(a.root());
            return CompletableFuture.completedFuture(TrainerRendezvous.Answers.done());
        }
        if (request instanceof TrainerRendezvous.Find f) {
            return root(f.group()).thenApply(TrainerRendezvous.Answers::of);
        }
        if (request instanceof TrainerRendezvous.Ended e) {
            boolean last =
                    ended.computeIfAbsent(e.group(), g -> new TrainerRendezvous.Endings())
                            .ended(e.device(), e.devices());
            return CompletableFuture.completedFuture(TrainerRendezvous.Answers.ended(last));
        }
        if (request instanceof TrainerRendezvous.ClaimGpu c) {
            int position =
                    gpus.computeIfAbsent(c.group(), g -> new GpuClaims())
                            .claim(c.taskManager(), c.device(), c.gpus());
            return CompletableFuture.completedFuture(TrainerRendezvous.Answers.gpu(position));
        }
        return CompletableFuture.failedFuture(
                new IllegalArgumentException("not a trainers' request: " + request));
    }

    private CompletableFuture<TrainerRendezvous.Root> root(String group) {
        return roots.computeIfAbsent(group, g -> new CompletableFuture<>());
    }

    private static <V> Map<String, V> bounded() {
        return new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > ATTEMPTS;
            }
        };
    }

    @Override
    public void start() throws Exception {
        queues.start();
        started = true;
    }

    @Override
    public void close() throws Exception {
        queues.close();
    }

    @Override
    public void handleEventFromOperator(int subtask, int attempt, OperatorEvent event)
            throws Exception {
        if (event instanceof CheckpointAfterRestore.Running) {
            afterRestore.running(subtask);
        } else {
            queues.handleEventFromOperator(subtask, attempt, event);
        }
    }

    @Override
    public void checkpointCoordinator(long checkpointId, CompletableFuture<byte[]> result)
            throws Exception {
        ledger.started(checkpointId);
        queues.checkpointCoordinator(checkpointId, result);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        ledger.completed(checkpointId);
        queues.notifyCheckpointComplete(checkpointId);
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) {
        ledger.aborted(checkpointId);
        queues.notifyCheckpointAborted(checkpointId);
    }

    @Override
    public void resetToCheckpoint(long checkpointId, byte[] checkpointData) throws Exception {
        queues.resetToCheckpoint(checkpointId, checkpointData);
        afterRestore.resetAll();
        // Before start: the job itself starts from a checkpoint (--resume), not a failure.
        if (started) {
            restored(checkpointId);
        }
    }

    @Override
    public void subtaskReset(int subtask, long checkpointId) {
        queues.subtaskReset(subtask, checkpointId);
        afterRestore.reset(subtask);
        // The trainers restart together (one replica group): one restore, counted at the first.
        if (subtask == 0) {
            restored(checkpointId);
        }
    }

    private void restored(long checkpointId) {
        Throwable cause = failures.last();
        // The run's one line for a restore: Flink's own are in the run's log with their traces.
        LOG.warn(
                "The job failed ({}) and restarts from {}",
                cause == null ? "cause unknown" : oneLine(cause),
                checkpointId < 0 ? "its start" : "checkpoint " + checkpointId);
        String tooMany = ledger.restored();
        if (tooMany != null) {
            failJob.accept(
                    new SuppressRestartsException(new RestartsRunOut(tooMany, failures.last())));
        }
    }

    /**
     * A failure in one line: its message, and its root cause's where that says what the message
     * does not ("Could not perform checkpoint 3 ...; caused by ...: No space left on device").
     */
    static String oneLine(Throwable failure) {
        String top = firstLine(failure.getMessage());
        Throwable root = failure;
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        while (root.getCause() != null && seen.add(root)) {
            root = root.getCause();
        }
        String why = firstLine(root.getMessage());
        if (root == failure || why.isEmpty() || top.contains(why)) {
            return top;
        }
        return top + "; caused by " + root.getClass().getSimpleName() + ": " + why;
    }

    private static String firstLine(String message) {
        return message == null ? "" : message.lines().findFirst().orElse("");
    }

    @Override
    public void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        failures.failed(reason);
        queues.executionAttemptFailed(subtask, attempt, reason);
    }

    @Override
    public void executionAttemptReady(int subtask, int attempt, SubtaskGateway gateway) {
        queues.executionAttemptReady(subtask, attempt, gateway);
    }

    /**
     * Makes the coordinator of the trainer operator {@code operator}, writing the checkpoints'
     * account into {@code runDir} (null: nowhere), and stopping the job past {@code
     * allowedRestores} restores since the last completed checkpoint.
     */
    record Provider(OperatorID operator, String runDir, int allowedRestores)
            implements OperatorCoordinator.Provider {
        @Override
        public OperatorID getOperatorId() {
            return operator;
        }

        @Override
        public OperatorCoordinator create(Context context) throws Exception {
            CheckpointLedger ledger =
                    new CheckpointLedger(
                            CheckpointLedger.timeoutOf(context::getCheckpointCoordinator),
                            runDir == null ? null : Path.of(runDir),
                            allowedRestores);
            ledger.register(context.metricGroup());
            return new TrainerCoordinator(
                    QueueCoordinator.provider(operator).create(context),
                    new CheckpointAfterRestore(
                            context::getCheckpointCoordinator, context::currentParallelism),
                    ledger,
                    LastFailure.in(context.getCoordinatorStore()),
                    context::failJob);
        }
    }
}
