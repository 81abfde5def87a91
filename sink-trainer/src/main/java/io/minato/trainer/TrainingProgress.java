package io.minato.trainer;

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

    void register(int device, Supplier<DeviceCounters> counters) {
        devices.put(device, counters);
    }

    /** The devices' counters summed: steps, samples, fast, slow and busy time. */
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
        return new Totals(steps, fast, slow, busy);
    }

    /** Sums over the devices that reported. */
    public record Totals(long steps, long fast, long slow, long busyNanos) {
        public long samples() {
            return fast + slow;
        }
    }
}
