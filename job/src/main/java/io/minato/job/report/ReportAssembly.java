package io.minato.job.report;

import io.minato.loader.AugmentOperator;
import io.minato.loader.CacheMetrics;
import io.minato.loader.PrepTimes;
import io.minato.loader.Receivers;
import io.minato.loader.SampleChunks;
import io.minato.loader.SampleSource;
import io.minato.loader.TaskManagerUsage;
import io.minato.loader.TimeoutPolicy;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How a run's report comes together, whoever writes it: the run's configuration, known before it
 * starts, with what the job's accumulators say when it ends ({@link RunReport.Outcome}), the
 * evaluation after it and what a waiting process measured. The train command and a detached job's
 * own report ({@code DetachedReport}) both read the job through it.
 */
public final class ReportAssembly implements Serializable {
    private static final long serialVersionUID = 1L;

    private final RunReport.Configuration configuration;
    private final String dataDir;
    private final TimeoutPolicy timeout;
    private final boolean caseCache;

    /**
     * @param dataDir the data folder, which the report's quarantine names files under
     * @param timeout the deadline asked for, which the report gives when no worker set one
     * @param caseCache whether the workload remembered per-sample results (the report's counts)
     */
    public ReportAssembly(
            RunReport.Configuration configuration,
            Path dataDir,
            TimeoutPolicy timeout,
            boolean caseCache) {
        this.configuration = configuration;
        this.dataDir = dataDir.toAbsolutePath().toString();
        this.timeout = timeout;
        this.caseCache = caseCache;
    }

    public RunReport.Configuration configuration() {
        return configuration;
    }

    /** What the job's accumulators say of the run. */
    public RunReport.Outcome outcome(Map<String, Object> accumulators) {
        return new RunReport.Outcome(
                quarantine(Path.of(dataDir), accumulators),
                accumulators.get(AugmentOperator.SAMPLES_SKIPPED) instanceof Long n ? n : 0,
                firstRequest(accumulators),
                timeoutMillis(accumulators, configuration.minato(), timeout),
                cacheCounts(accumulators, caseCache),
                configuration.workers().auto() ? activeWorkersMean(accumulators) : null,
                crossed(accumulators),
                fetch(accumulators),
                taskManagers(accumulators),
                null,
                null);
    }

    /** What crossed between TaskManagers (null: the workers did not say). */
    static RunReport.Crossed crossed(Map<String, Object> accumulators) {
        if (!(accumulators.get(Receivers.SENT_AS_BYTES) instanceof Long asBytes)) {
            return null;
        }
        return new RunReport.Crossed(
                asBytes, accumulators.get(SampleChunks.SENT_IN_PIECES) instanceof Long n ? n : 0);
    }

    /**
     * Inputs the workers quarantined while the run prepared them (each once, however many workers
     * met it), in file order.
     */
    public static List<RunReport.Quarantine> quarantine(
            Path dataDir, Map<String, Object> accumulators) {
        if (!(accumulators.get(AugmentOperator.QUARANTINED) instanceof List<?> during)) {
            return List.of();
        }
        TreeMap<String, RunReport.Quarantine> byFile = new TreeMap<>();
        for (Object entry : during) {
            String[] fileAndReason = String.valueOf(entry).split("\0", 2);
            RunReport.Quarantine q =
                    RunReport.Quarantine.of(
                            dataDir,
                            Path.of(fileAndReason[0]),
                            fileAndReason.length > 1 ? fileAndReason[1] : "");
            byFile.putIfAbsent(q.file(), q);
        }
        return new ArrayList<>(byFile.values());
    }

    /** The loaders' time in reads of samples' files; null when no loader reported it. */
    public static RunReport.Fetch fetch(Map<String, Object> accumulators) {
        Object wall = accumulators.get(PrepTimes.FETCH_NANOS);
        Object cpu = accumulators.get(PrepTimes.FETCH_CPU_NANOS);
        return wall instanceof Long w && cpu instanceof Long c
                ? new RunReport.Fetch(w / 1e9, c / 1e9)
                : null;
    }

    /** The fast workers' mean of the scheduler's active count; null when none reported it. */
    public static Double activeWorkersMean(Map<String, Object> accumulators) {
        Object mean = accumulators.get(AugmentOperator.ACTIVE_WORKERS_MEAN);
        return mean instanceof Double d && !d.isNaN() ? d : null;
    }

    /** When the source handed out its first sample; null when it did not. */
    static Long firstRequest(Map<String, Object> accumulators) {
        Object first = accumulators.get(SampleSource.FIRST_REQUEST_MILLIS);
        return first instanceof Long l && l != Long.MAX_VALUE ? l : null;
    }

    static RunReport.CacheCounts cacheCounts(Map<String, Object> accumulators, boolean enabled) {
        if (!enabled) {
            return null;
        }
        Object hits = accumulators.get(CacheMetrics.HITS);
        Object misses = accumulators.get(CacheMetrics.MISSES);
        Object bytes = accumulators.get(CacheMetrics.BYTES);
        return new RunReport.CacheCounts(
                hits instanceof Long h ? h : 0,
                misses instanceof Long m ? m : 0,
                bytes instanceof Long b ? b : null);
    }

    static Double timeoutMillis(
            Map<String, Object> accumulators, boolean minato, TimeoutPolicy policy) {
        if (!minato) {
            return null;
        }
        Double ms = accumulators.get(AugmentOperator.TIMEOUT_MS) instanceof Double d ? d : null;
        // No worker set a deadline (an auto timeout over fewer samples than it needs to learn
        // one): the maximum over none is -Infinity; say "none".
        if (ms != null && Double.isFinite(ms)) {
            return ms;
        }
        return policy.isAuto() ? null : policy.timeoutNanos() / 1e6;
    }

    /** Each TaskManager's part of the job ({@link TaskManagerUsage}); null when none said. */
    public static List<RunReport.TaskManager> taskManagers(Map<String, Object> accumulators) {
        if (!(accumulators.get(TaskManagerUsage.NAME) instanceof Map<?, ?> byId)) {
            return null;
        }
        List<RunReport.TaskManager> all = new ArrayList<>();
        byId.forEach(
                (id, value) -> {
                    TaskManagerUsage.Usage u = (TaskManagerUsage.Usage) value;
                    all.add(
                            new RunReport.TaskManager(
                                    String.valueOf(id),
                                    u.workers(),
                                    u.trainers(),
                                    u.cpuNanos() / 1e9,
                                    u.peakRssBytes() < 0 ? null : u.peakRssBytes(),
                                    Double.isNaN(u.activeMean()) ? null : u.activeMean()));
                });
        return all;
    }
}
