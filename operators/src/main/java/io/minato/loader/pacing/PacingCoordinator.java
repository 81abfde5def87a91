package io.minato.loader.pacing;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;

/**
 * The workers' coordinator: tells every worker subtask, wherever it runs, how the devices' queues
 * stand ({@link JobQueues}), so that the worker scheduler of each TaskManager paces its workers by
 * every device's queue, not only by those of trainers in its own JVM. It looks at the job's {@link
 * DeviceQueues} every {@link #PERIOD_MILLIS} and tells the workers when the view changed, and a
 * worker that (re)starts at once.
 *
 * <p>It tells nothing while a checkpoint of its own is under way (from its part of the checkpoint
 * until the checkpoint completes or is aborted). Flink holds back an event sent to a subtask while
 * that subtask's checkpoint is under way, and every later coordinator checkpoint waits until each
 * event sent before it was received; when the subtask fails meanwhile, Flink 2.3's failover gives
 * the new attempt a new gateway and neither sends nor fails what the old one held back, so the next
 * checkpoint waited for ever ("Coordinator checkpoint N ... is awaiting M pending events"). A
 * worker misses nothing it needs: the view is a hint, and the current one follows the checkpoint.
 *
 * <p>It tells only subtasks that said they run ({@link WorkerRunning}). Flink opens a gateway to
 * every subtask, also to one that a restore found finished (its workers had ended before the
 * checkpoint, the trainers had not): such a task runs no operator and fails on any event, and the
 * job with it, restore after restore.
 */
public final class PacingCoordinator extends StatelessCoordinator {
    /** How often the view is looked at: a few times within a worker scheduler's tick. */
    public static final long PERIOD_MILLIS = 50;

    private final DeviceQueues queues;
    private final LastFailure failures;
    private final String name;
    private ScheduledExecutorService timer;

    // Guarded by this: sends happen inside it, so none can slip past the start of a checkpoint.
    private final Map<Integer, SubtaskGateway> gateways = new HashMap<>(); // of running attempts
    private final Map<Integer, SubtaskGateway> opened = new HashMap<>(); // not yet said running
    private final Map<Integer, Integer> running = new HashMap<>(); // attempts said running
    private final Set<Integer> untold = new HashSet<>(); // ready during a checkpoint
    private final TreeSet<Long> checkpoints = new TreeSet<>(); // under way
    private JobQueues told = JobQueues.NONE;

    private PacingCoordinator(Context context, String name) {
        this.queues = DeviceQueues.in(context.getCoordinatorStore());
        this.failures = LastFailure.in(context.getCoordinatorStore());
        this.name = name;
    }

    @Override
    public void start() {
        timer =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "minato-pacing-" + name);
                            t.setDaemon(true);
                            return t;
                        });
        timer.scheduleWithFixedDelay(
                this::tellIfChanged, PERIOD_MILLIS, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
    }

    private synchronized void tellIfChanged() {
        if (!checkpoints.isEmpty()) {
            return;
        }
        JobQueues now = queues.now();
        if (!now.equals(told)) {
            told = now;
            untold.clear();
            gateways.values().forEach(g -> tell(g, now));
        } else if (!untold.isEmpty()) {
            if (now.known()) {
                untold.stream()
                        .map(gateways::get)
                        .filter(g -> g != null)
                        .forEach(g -> tell(g, now));
            }
            untold.clear();
        }
    }

    /**
     * Sends, not waiting for the answer: a worker that finished or failed meanwhile misses a hint
     * it no longer needs ({@link JobQueues#isLossTolerant}).
     */
    private static void tell(SubtaskGateway gateway, JobQueues view) {
        gateway.sendEvent(view);
    }

    @Override
    public void checkpointCoordinator(long checkpointId, CompletableFuture<byte[]> result) {
        synchronized (this) {
            checkpoints.add(checkpointId);
        }
        result.complete(new byte[0]);
    }

    /**
     * Flink has opened the gateways before it tells a coordinator that a checkpoint ended, and
     * starts no other coordinator checkpoint meanwhile: the view goes out at once, not at the next
     * look, which could fall into the next checkpoint at short intervals.
     */
    @Override
    public synchronized void notifyCheckpointComplete(long checkpointId) {
        checkpoints.headSet(checkpointId, true).clear(); // it subsumes any earlier one
        tellIfChanged();
    }

    @Override
    public synchronized void notifyCheckpointAborted(long checkpointId) {
        checkpoints.remove(checkpointId);
        tellIfChanged();
    }

    @Override
    public synchronized void resetToCheckpoint(long checkpointId, byte[] checkpointData) {
        checkpoints.clear(); // Flink has released whatever it held back, and aborted the rest
    }

    @Override
    public void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
        synchronized (this) {
            gateways.clear();
            opened.clear();
            running.clear();
        }
    }

    @Override
    public synchronized void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        failures.failed(reason);
        SubtaskGateway g = gateways.get(subtask);
        if (g != null && g.getExecution().getAttemptNumber() == attempt) {
            gateways.remove(subtask);
            untold.remove(subtask);
        }
        g = opened.get(subtask);
        if (g != null && g.getExecution().getAttemptNumber() == attempt) {
            opened.remove(subtask);
        }
        running.remove(subtask, attempt);
    }

    @Override
    public synchronized void executionAttemptReady(
            int subtask, int attempt, SubtaskGateway gateway) {
        gateways.remove(subtask);
        untold.remove(subtask);
        opened.put(subtask, gateway);
        join(subtask);
    }

    @Override
    public synchronized void handleEventFromOperator(
            int subtask, int attempt, OperatorEvent event) {
        if (event instanceof WorkerRunning) {
            running.put(subtask, attempt);
            join(subtask);
        }
    }

    /** Tells {@code subtask} the view once both its gateway is open and it said it runs. */
    private void join(int subtask) {
        SubtaskGateway gateway = opened.get(subtask);
        Integer attempt = running.get(subtask);
        if (gateway == null
                || attempt == null
                || gateway.getExecution().getAttemptNumber() != attempt) {
            return;
        }
        opened.remove(subtask);
        gateways.put(subtask, gateway);
        if (!checkpoints.isEmpty()) {
            untold.add(subtask);
        } else if (told.known()) {
            tell(gateway, told);
        }
    }

    /** Makes the coordinator of the worker operator {@code operator}, named {@code name}. */
    public static OperatorCoordinator.Provider provider(OperatorID operator, String name) {
        return new Provider(operator, context -> new PacingCoordinator(context, name));
    }
}
