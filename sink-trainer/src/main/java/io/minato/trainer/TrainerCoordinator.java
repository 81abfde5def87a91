package io.minato.trainer;

import io.minato.loader.pacing.QueueCoordinator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.CoordinationRequest;
import org.apache.flink.runtime.operators.coordination.CoordinationRequestHandler;
import org.apache.flink.runtime.operators.coordination.CoordinationResponse;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * The trainers' coordinator in the JobManager: their queue reports go to the job's worker
 * schedulers ({@link QueueCoordinator}), it is where the trainers of a run attempt meet ({@link
 * TrainerRendezvous}) and claim their TaskManagers' GPUs ({@link GpuClaims}), and after a restore
 * it asks for a checkpoint once they run ({@link CheckpointAfterRestore}). It holds nothing a
 * checkpoint needs: after a restore the trainers, a new attempt, meet again.
 */
final class TrainerCoordinator implements OperatorCoordinator, CoordinationRequestHandler {
    /** Attempts remembered: a few, for the requests of an attempt that is still ending. */
    private static final int ATTEMPTS = 16;

    private final OperatorCoordinator queues;
    private final CheckpointAfterRestore afterRestore;
    private final Map<String, CompletableFuture<TrainerRendezvous.Root>> roots = bounded();
    private final Map<String, TrainerRendezvous.Endings> ended = bounded();
    private final Map<String, GpuClaims> gpus = bounded();

    TrainerCoordinator(OperatorCoordinator queues, CheckpointAfterRestore afterRestore) {
        this.queues = queues;
        this.afterRestore = afterRestore;
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
        queues.checkpointCoordinator(checkpointId, result);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        queues.notifyCheckpointComplete(checkpointId);
    }

    @Override
    public void resetToCheckpoint(long checkpointId, byte[] checkpointData) throws Exception {
        queues.resetToCheckpoint(checkpointId, checkpointData);
        afterRestore.resetAll();
    }

    @Override
    public void subtaskReset(int subtask, long checkpointId) {
        queues.subtaskReset(subtask, checkpointId);
        afterRestore.reset(subtask);
    }

    @Override
    public void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        queues.executionAttemptFailed(subtask, attempt, reason);
    }

    @Override
    public void executionAttemptReady(int subtask, int attempt, SubtaskGateway gateway) {
        queues.executionAttemptReady(subtask, attempt, gateway);
    }

    /** Makes the coordinator of the trainer operator {@code operator}. */
    record Provider(OperatorID operator) implements OperatorCoordinator.Provider {
        @Override
        public OperatorID getOperatorId() {
            return operator;
        }

        @Override
        public OperatorCoordinator create(Context context) throws Exception {
            return new TrainerCoordinator(
                    new QueueCoordinator.Provider(operator).create(context),
                    new CheckpointAfterRestore(
                            context::getCheckpointCoordinator, context::currentParallelism));
        }
    }
}
