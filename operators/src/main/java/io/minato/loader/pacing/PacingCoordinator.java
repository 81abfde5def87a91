package io.minato.loader.pacing;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.operators.coordination.OperatorCoordinator;

/**
 * The workers' coordinator: tells every worker subtask, wherever it runs, how the devices' queues
 * stand ({@link JobQueues}), so that the worker scheduler of each TaskManager paces its workers by
 * every device's queue, not only by those of trainers in its own JVM. It looks at the job's {@link
 * DeviceQueues} every {@link #PERIOD_MILLIS} and tells the workers when the view changed, and a
 * worker that (re)starts at once.
 */
public final class PacingCoordinator extends StatelessCoordinator {
    /** How often the view is looked at: a few times within a worker scheduler's tick. */
    static final long PERIOD_MILLIS = 50;

    private final DeviceQueues queues;
    private final String name;
    private final Map<Integer, SubtaskGateway> gateways = new ConcurrentHashMap<>();
    private ScheduledExecutorService timer;
    private volatile JobQueues told = JobQueues.NONE;

    private PacingCoordinator(Context context, String name) {
        this.queues = DeviceQueues.in(context.getCoordinatorStore());
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

    private void tellIfChanged() {
        JobQueues now = queues.now();
        if (!now.equals(told)) {
            told = now;
            gateways.values().forEach(g -> tell(g, now));
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
    public void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
        gateways.clear();
    }

    @Override
    public void executionAttemptFailed(int subtask, int attempt, Throwable reason) {
        gateways.remove(subtask);
    }

    @Override
    public void executionAttemptReady(int subtask, int attempt, SubtaskGateway gateway) {
        gateways.put(subtask, gateway);
        JobQueues now = told;
        if (now.known()) {
            tell(gateway, now);
        }
    }

    /** Makes the coordinator of the worker operator {@code operator}, named {@code name}. */
    public record Provider(OperatorID operator, String name)
            implements OperatorCoordinator.Provider {
        @Override
        public OperatorID getOperatorId() {
            return operator;
        }

        @Override
        public OperatorCoordinator create(Context context) {
            return new PacingCoordinator(context, name);
        }
    }
}
