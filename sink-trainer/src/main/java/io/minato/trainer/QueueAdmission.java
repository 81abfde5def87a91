package io.minato.trainer;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;

/**
 * Whether a device's queue takes the batch that arrives now, and why: below its depth, or beyond it
 * for a named reason, where waiting for the consumer would hold up a checkpoint. Each batch taken
 * beyond the depth counts in the metric {@code admittedBeyondDepth.<reason>}.
 *
 * <p>Why each reason exists:
 *
 * <ul>
 *   <li>{@link Reason#RESTORING}: Flink takes no checkpoint until the task has consumed the
 *       in-flight data of the one it restored, and those batches are few (what the network buffers
 *       held) and checkpointed as identities in the queue anyway.
 *   <li>{@link Reason#PREPARING}: while the consumer prepares (a model built and restored, about a
 *       second), nothing frees the queue: up to {@link #PREPARING_DEPTHS} depths are taken, so that
 *       the task reaches the first checkpoint's barrier rather than wait for the first step.
 *   <li>{@link Reason#CUT_PENDING} and {@link Reason#PEER_STARVING}: replicas never hold the
 *       upstream back while another device starves (its batches may sit behind this device's
 *       samples in the shared operators upstream, and the step waits for it), nor while a
 *       checkpoint's cut holds the group (the task must reach its barrier).
 *   <li>{@link Reason#DRAINING}: a write waits for two consumed batches at most, so a queue longer
 *       than its depth (taken while the task restored, say) drains by one batch a write rather than
 *       all of it before the next write, holding the task, and a checkpoint's barrier with it.
 *   <li>{@link Reason#STALLED}: the consumer has waited on something outside the job for over
 *       {@link #STALLED_TAKE_NANOS} while a write waits (a training process that is not connected,
 *       or asks for nothing). An aligned barrier (a savepoint's) waits in the input behind the
 *       arriving batch, so once a second a batch is taken, as identities: its samples are prepared
 *       again when their turn comes, and the workers prepare one batch a second for nothing.
 * </ul>
 */
public final class QueueAdmission {

    /** How many queue depths a queue takes while its consumer prepares. */
    static final int PREPARING_DEPTHS = 4;

    /** How long the consumer must have stalled before a batch is taken beyond the depth. */
    static final long STALLED_TAKE_NANOS = 1_000_000_000L;

    /** Why a batch was taken. */
    public enum Reason {
        BELOW_DEPTH,
        RESTORING,
        PREPARING,
        CUT_PENDING,
        PEER_STARVING,
        DRAINING,
        STALLED;

        /** Whether the batch is queued as its samples' identities only. */
        boolean asIdentities() {
            return this == STALLED;
        }
    }

    /**
     * What sits behind a queue, as its admission sees it: read under the queue's lock. A consumer
     * whose answers change without a signal to the queue ({@link #polled}) is polled.
     */
    public interface Consumer {
        /** Whether the consumer has prepared for its first batch. */
        boolean ready();

        /** Whether a checkpoint's cut holds the consumer's replica group. */
        default boolean cutPending() {
            return false;
        }

        /** Whether another replica of the consumer's group has no batch. */
        default boolean peerStarving() {
            return false;
        }

        /** Whether the consumer waits on something outside the job, with nothing to show for it. */
        default boolean stalled() {
            return false;
        }

        /** Whether the answers above change without a signal to the queue. */
        default boolean polled() {
            return false;
        }
    }

    private final int depth;
    private final Map<Reason, Counter> beyondDepth = new EnumMap<>(Reason.class);

    QueueAdmission(int depth, MetricGroup metrics) {
        if (depth < 1) {
            throw new IllegalArgumentException("queue depth must be >= 1: " + depth);
        }
        this.depth = depth;
        MetricGroup group = metrics.addGroup("admittedBeyondDepth");
        for (Reason r : Reason.values()) {
            if (r != Reason.BELOW_DEPTH) {
                beyondDepth.put(r, group.counter(r.name().toLowerCase(Locale.ROOT)));
            }
        }
    }

    int depth() {
        return depth;
    }

    /**
     * Why the queue takes a batch now, or null to wait.
     *
     * @param held batches queued, the one being consumed included
     * @param consumedSinceArrival batches consumed since the arriving batch's write began
     * @param restoring whether the task still consumes a restored checkpoint's in-flight data
     * @param stalledNanos how long the consumer has stalled without a break while this write waits
     */
    Reason decide(
            int held,
            long consumedSinceArrival,
            boolean restoring,
            Consumer consumer,
            long stalledNanos) {
        if (held < depth) {
            return Reason.BELOW_DEPTH;
        }
        if (restoring) {
            return Reason.RESTORING;
        }
        if (!consumer.ready() && held < depth * PREPARING_DEPTHS) {
            return Reason.PREPARING;
        }
        if (consumer.cutPending()) {
            return Reason.CUT_PENDING;
        }
        if (consumer.peerStarving()) {
            return Reason.PEER_STARVING;
        }
        if (consumedSinceArrival >= 2) {
            return Reason.DRAINING;
        }
        if (stalledNanos >= STALLED_TAKE_NANOS) {
            return Reason.STALLED;
        }
        return null;
    }

    /** Counts a batch taken for {@code reason}. */
    void admitted(Reason reason) {
        Counter c = beyondDepth.get(reason);
        if (c != null) {
            c.inc();
        }
    }
}
