package io.minato.trainer;

import io.minato.loader.WorkerScheduler;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The devices' counters of a run, read from its trainers, for whoever runs the job in the same JVM
 * (the command's progress line on the embedded cluster). Keyed by the run's output folder; under
 * {@code flink run} the trainers live in a TaskManager and the client sees nothing here.
 */
public final class TrainingProgress {
    private static final Map<String, TrainingProgress> RUNS = new ConcurrentHashMap<>();

    // A restarted device's new trainer replaces the old one.
    private final Map<Integer, Supplier<DeviceCounters>> devices = new ConcurrentHashMap<>();

    // The worker scheduler of the run's job in this JVM (how many workers prepare at once, of how
    // many), as its trainers last registered it; null before one did.
    private volatile WorkerScheduler scheduler;

    private TrainingProgress() {}

    /** The progress of the run writing to {@code outputDir}. */
    public static TrainingProgress of(Path outputDir) {
        return RUNS.computeIfAbsent(
                outputDir.toAbsolutePath().normalize().toString(), k -> new TrainingProgress());
    }

    /** Forgets the run (when its command is done with it). */
    public static void forget(Path outputDir) {
        RUNS.remove(outputDir.toAbsolutePath().normalize().toString());
    }

    void register(int device, Supplier<DeviceCounters> counters, WorkerScheduler workers) {
        devices.put(device, counters);
        scheduler = workers;
    }

    /**
     * The devices' counters summed: steps, samples, fast, slow and busy time; and the workers the
     * scheduler lets prepare at once, of those it paces (both 0 when it paces none).
     */
    public Totals totals() {
        long steps = 0;
        long fast = 0;
        long slow = 0;
        long busy = 0;
        for (Supplier<DeviceCounters> device : devices.values()) {
            DeviceCounters c = device.get();
            steps += c.steps();
            fast += c.fast();
            slow += c.slow();
            busy += c.busyNanos();
        }
        WorkerScheduler w = scheduler;
        int workers = w == null ? 0 : w.workers();
        return new Totals(steps, fast, slow, busy, workers == 0 ? 0 : w.active(), workers);
    }

    /** Sums over the devices that reported. */
    public record Totals(
            long steps,
            long fast,
            long slow,
            long busyNanos,
            int activeWorkers,
            int scheduledWorkers) {
        public long samples() {
            return fast + slow;
        }
    }
}
