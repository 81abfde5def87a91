package io.minato.loader.pacing;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.runtime.operators.coordination.CoordinatorStore;

/**
 * The latest report of every device's batch queue, in the JobManager: written by the trainers'
 * {@link QueueCoordinator}, read by the workers' {@link PacingCoordinator}. The two meet in Flink's
 * {@link CoordinatorStore}, which the coordinators of one job share.
 */
final class DeviceQueues {
    /** This view's key in the job's coordinator store. */
    static final String KEY = "minato.device-queues";

    private final Map<Integer, QueueReport> latest = new ConcurrentHashMap<>();

    /** The job's view, made by whichever coordinator comes first. */
    static DeviceQueues in(CoordinatorStore store) {
        return (DeviceQueues)
                store.compute(KEY, (key, old) -> old != null ? old : new DeviceQueues());
    }

    void report(QueueReport report) {
        latest.put(report.device(), report);
    }

    /** What the workers are told now. */
    JobQueues now() {
        int roomy = 0;
        for (QueueReport r : latest.values()) {
            if (r.roomy()) {
                roomy++;
            }
        }
        return new JobQueues(latest.size(), roomy);
    }
}
