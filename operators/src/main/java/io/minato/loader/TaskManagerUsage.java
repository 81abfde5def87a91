package io.minato.loader;

import io.minato.sample.SampleHandoff;
import java.io.IOException;
import java.io.Serializable;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;

/**
 * What each TaskManager of the job held and used, as one accumulator over the whole job: keyed by
 * Flink's TaskManager id, merged over the subtasks that ran there. A sum over TaskManagers would
 * mislead (a trainer's TaskManager receives every sample's bytes, a preparer's prepares them), so
 * the report gives each its own line.
 *
 * <p>Each worker and trainer subtask adds, at its close, the CPU time its TaskManager's process
 * used while the subtask ran and the process's peak resident memory; subtasks of one TaskManager
 * overlap, so those merge as the largest. Several TaskManagers in one JVM (a MiniCluster) each show
 * that JVM's figures.
 */
public final class TaskManagerUsage
        implements Accumulator<TaskManagerUsage.Report, TreeMap<String, TaskManagerUsage.Usage>> {
    private static final long serialVersionUID = 1L;

    /** The accumulator's name in the job. */
    public static final String NAME = "taskManagers";

    private static final Path STATUS = Path.of("/proc/self/status");

    /**
     * One TaskManager's part of the job.
     *
     * @param workers preparation subtasks (fast and slow) that ran there
     * @param trainers trainer subtasks (devices) that ran there
     * @param cpuNanos CPU time its process used while the job's subtasks ran there
     * @param peakRssBytes its process's peak resident memory since it started; -1 unknown
     * @param activeMean the mean of its worker scheduler's active count; NaN when none paced
     */
    public record Usage(
            int workers, int trainers, long cpuNanos, long peakRssBytes, double activeMean)
            implements Serializable {
        Usage merge(Usage o) {
            return new Usage(
                    workers + o.workers,
                    trainers + o.trainers,
                    Math.max(cpuNanos, o.cpuNanos),
                    Math.max(peakRssBytes, o.peakRssBytes),
                    Double.isNaN(activeMean) ? o.activeMean : Math.max(activeMean, o.activeMean));
        }
    }

    /** A subtask's usage, with the TaskManager it ran in. */
    public record Report(String taskManager, Usage usage) implements Serializable {}

    private TreeMap<String, Usage> byTaskManager = new TreeMap<>();

    /**
     * A subtask's share, measured from its open ({@link #cpuNow} then) to its close: register at
     * open, {@link #close} at close.
     */
    public static final class Share {
        private final TaskManagerUsage accumulator;
        private final String taskManager;
        private final long cpuAtOpen;

        private Share(TaskManagerUsage accumulator, String taskManager) {
            this.accumulator = accumulator;
            this.taskManager = taskManager;
            this.cpuAtOpen = cpuNow();
        }

        /** Adds this subtask's usage: a worker or a trainer, and its scheduler's mean (or NaN). */
        public void close(boolean trainer, double activeMean) {
            accumulator.add(
                    new Report(
                            taskManager,
                            new Usage(
                                    trainer ? 0 : 1,
                                    trainer ? 1 : 0,
                                    Math.max(0, cpuNow() - cpuAtOpen),
                                    peakRss(),
                                    activeMean)));
        }
    }

    /** Registers the accumulator of the subtask with {@code context}, its share starting now. */
    public static Share open(RuntimeContext context, MetricGroup metrics) {
        TaskManagerUsage usage = new TaskManagerUsage();
        context.addAccumulator(NAME, usage);
        return new Share(usage, taskManagerName(metrics));
    }

    /** {@code names} and this accumulator's, for {@link AccumulatorFiles#write}. */
    public static String[] with(String... names) {
        String[] all = Arrays.copyOf(names, names.length + 1);
        all[names.length] = NAME;
        return all;
    }

    /** Flink's id of the TaskManager ({@code <tm_id>}), or "local" in an operator harness. */
    private static String taskManagerName(MetricGroup metrics) {
        String id = SampleHandoff.taskManagerOf(metrics);
        return id.isEmpty() ? "local" : id;
    }

    /** This process's CPU time so far, in nanoseconds (0 where the JVM does not say). */
    static long cpuNow() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean sun
                ? Math.max(0, sun.getProcessCpuTime())
                : 0;
    }

    /** This process's peak resident memory ({@code VmHWM}); -1 where there is no /proc. */
    public static long peakRss() {
        try {
            for (String line : Files.readAllLines(STATUS, StandardCharsets.US_ASCII)) {
                if (line.startsWith("VmHWM:")) {
                    String[] f = line.substring(6).strip().split("\\s+");
                    return Long.parseLong(f[0]) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    @Override
    public synchronized void add(Report report) {
        byTaskManager.merge(report.taskManager(), report.usage(), Usage::merge);
    }

    @Override
    public synchronized TreeMap<String, Usage> getLocalValue() {
        return new TreeMap<>(byTaskManager);
    }

    @Override
    public synchronized void resetLocal() {
        byTaskManager.clear();
    }

    @Override
    public void merge(Accumulator<Report, TreeMap<String, Usage>> other) {
        for (Map.Entry<String, Usage> e : other.getLocalValue().entrySet()) {
            add(new Report(e.getKey(), e.getValue()));
        }
    }

    @Override
    public synchronized TaskManagerUsage clone() {
        TaskManagerUsage copy = new TaskManagerUsage();
        copy.byTaskManager = new TreeMap<>(byTaskManager);
        return copy;
    }
}
