package io.minato.trainer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's checkpoints and failures as the trainers' coordinator in the JobManager sees them, over
 * the whole job (a coordinator outlives the restarts of its tasks):
 *
 * <ul>
 *   <li>checkpoints completed, failed, and timed out (failed once pending for Flink's whole
 *       checkpoint timeout), and the longest any was pending, as metrics and in {@value #FILE} in
 *       the run directory, which the run's report reads;
 *   <li>the job's restores since its last completed checkpoint: past the allowed number the job is
 *       stopped. Flink 2.3's restart strategies count failures over time (a rate, or until a quiet
 *       period); none counts from a completed checkpoint, which is what says that a run made
 *       progress between its failures.
 * </ul>
 */
final class CheckpointLedger {
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointLedger.class);

    /** The file in the run directory. */
    static final String FILE = TrainerSink.CHECKPOINTS_FILE;

    private final LongSupplier timeoutMillis; // 0: no timeout
    private final Path file; // null: none written
    private final int allowedRestores;

    // Guarded by this.
    private final Map<Long, Long> pendingSince = new HashMap<>(); // checkpoint id -> nanoTime
    private long completed;
    private long failed;
    private long timedOut;
    private long longestNanos;
    private long restores;
    private int restoresSinceCheckpoint;
    private long lastCompleted = -1;

    /**
     * @param timeoutMillis the job's checkpoint timeout when asked (0 when it takes no checkpoints)
     * @param runDir where {@value #FILE} goes; null: nowhere
     * @param allowedRestores restores since the last completed checkpoint the job goes on after
     */
    CheckpointLedger(LongSupplier timeoutMillis, Path runDir, int allowedRestores) {
        this.timeoutMillis = timeoutMillis;
        this.file = runDir == null ? null : runDir.resolve(FILE);
        this.allowedRestores = allowedRestores;
    }

    /** Registers the counts as gauges of the coordinator's metric group. */
    void register(MetricGroup metrics) {
        metrics.<Long, org.apache.flink.metrics.Gauge<Long>>gauge(
                "checkpointsTimedOut", this::timedOut);
        metrics.<Long, org.apache.flink.metrics.Gauge<Long>>gauge(
                "checkpointsFailed", this::failed);
        metrics.<Long, org.apache.flink.metrics.Gauge<Long>>gauge(
                "checkpointLongestPendingMillis", () -> longestNanos() / 1_000_000);
        metrics.<Integer, org.apache.flink.metrics.Gauge<Integer>>gauge(
                "restoresSinceCheckpoint", this::restoresSinceCheckpoint);
    }

    /** Flink took this coordinator's part of checkpoint {@code id}. */
    synchronized void started(long id) {
        pendingSince.put(id, System.nanoTime());
    }

    /** Checkpoint {@code id} completed; it subsumes any earlier one still pending. */
    synchronized void completed(long id) {
        Long since = pendingSince.remove(id);
        if (since != null) {
            longestNanos = Math.max(longestNanos, System.nanoTime() - since);
        }
        pendingSince.keySet().removeIf(other -> other < id);
        completed++;
        lastCompleted = id;
        restoresSinceCheckpoint = 0;
        write();
    }

    /** Checkpoint {@code id} failed: timed out, declined, or aborted by a failover. */
    synchronized void aborted(long id) {
        Long since = pendingSince.remove(id);
        if (since == null) {
            return; // not one this coordinator took part in, or told twice
        }
        long pending = System.nanoTime() - since;
        longestNanos = Math.max(longestNanos, pending);
        failed++;
        long timeout = timeoutNanos();
        if (timeout > 0 && pending >= timeout) {
            timedOut++;
            LOG.warn(
                    "Checkpoint {} timed out after {} ms ({} so far)",
                    id,
                    pending / 1_000_000,
                    timedOut);
        }
        write();
    }

    /**
     * The job was restored (its trainers reset after a failure).
     *
     * @return null to go on, or why the job must stop: more restores since the last completed
     *     checkpoint than allowed
     */
    synchronized String restored() {
        restores++;
        restoresSinceCheckpoint++;
        write();
        if (restoresSinceCheckpoint <= allowedRestores) {
            return null;
        }
        return String.format(
                Locale.ROOT,
                "%d failures since the last completed checkpoint (%s), more than the %d allowed"
                        + " (--restart-attempts)",
                restoresSinceCheckpoint,
                lastCompleted < 0 ? "none completed yet" : "checkpoint " + lastCompleted,
                allowedRestores);
    }

    synchronized long timedOut() {
        return timedOut;
    }

    synchronized long failed() {
        return failed;
    }

    synchronized long longestNanos() {
        return longestNanos;
    }

    synchronized int restoresSinceCheckpoint() {
        return restoresSinceCheckpoint;
    }

    private long timeoutNanos() {
        return timeoutMillis.getAsLong() * 1_000_000;
    }

    /** The checkpoint timeout of the job that {@code checkpoints} gives (0: it takes none). */
    static LongSupplier timeoutOf(Supplier<CheckpointCoordinator> checkpoints) {
        return () -> {
            CheckpointCoordinator c = checkpoints.get();
            return c == null ? 0 : c.getCheckpointTimeout();
        };
    }

    /** The counts as JSON: what {@value #FILE} holds. */
    synchronized String json() {
        return String.format(
                Locale.ROOT,
                "{\"completed\": %d, \"failed\": %d, \"timed_out\": %d, \"longest_pending_s\": %.3f,"
                        + " \"restores\": %d}%n",
                completed,
                failed,
                timedOut,
                longestNanos / 1e9,
                restores);
    }

    private void write() {
        if (file == null) {
            return;
        }
        try {
            Path tmp = file.resolveSibling(FILE + ".tmp");
            Files.writeString(tmp, json(), StandardCharsets.UTF_8);
            Files.move(
                    tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            // The counts are for the report; the job goes on without them.
            LOG.warn("could not write {}: {}", file, e.toString());
        }
    }
}
