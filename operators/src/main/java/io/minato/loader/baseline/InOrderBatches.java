package io.minato.loader.baseline;

import io.minato.sample.Batch;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The batches of a loader that hands them out strictly in order (the in-order and DJL baselines):
 * which of them are prepared, and so how long each was held back ({@link Batch#heldBackNanos}).
 * Safe to call from the workers and the operator thread.
 *
 * <p>The line is held while a later batch is ready and the head is not. A hold ends when the head
 * is ready; the batches ready by then (that head and the ones behind it) are the ones it kept back,
 * and each, when handed out, carries the time from the hold's start to its own handout. A hold that
 * starts while a batch kept back by the previous one still waits continues that one: the line has
 * not been free since.
 */
final class InOrderBatches {
    private final int batchSize;
    private final LongSupplier clock;
    private final Map<Long, Integer> prepared = new HashMap<>();
    // The batches a finished hold kept back, and when (clock time) that hold started.
    private final Map<Long, Long> heldSince = new HashMap<>();
    private long head;
    private boolean holding;
    private long holdingSince;

    /**
     * @param head the number of the first batch to hand out (after a restore, the next one)
     */
    InOrderBatches(int batchSize, long head) {
        this(batchSize, head, System::nanoTime);
    }

    InOrderBatches(int batchSize, long head, LongSupplier clock) {
        this.batchSize = batchSize;
        this.head = head;
        this.clock = clock;
    }

    /** One more sample of batch {@code batch} is prepared. */
    synchronized void samplePrepared(long batch) {
        if (batch >= head) {
            prepared.merge(batch, 1, Integer::sum);
            update(clock.getAsLong());
        }
    }

    /**
     * Batch {@code batch}, the head, is handed out; the next one is the head now.
     *
     * @return how long the line was held on its account, in nanoseconds (0: not held back)
     */
    synchronized long handedOut(long batch) {
        long now = clock.getAsLong();
        prepared.remove(batch);
        Long since = heldSince.remove(batch);
        head = Math.max(head, batch + 1);
        update(now);
        return since == null ? 0 : Math.max(0, now - since);
    }

    /** Nothing is held any more (the loader closes). */
    synchronized void close() {
        prepared.clear();
        heldSince.clear();
        holding = false;
    }

    /** Whether a later batch is ready while the head is not. */
    synchronized boolean holding() {
        return holding;
    }

    private void update(long now) {
        boolean held = laterReadyBehindUnreadyHead();
        if (held && !holding) {
            holdingSince = now;
            for (long since : heldSince.values()) {
                if (since - holdingSince < 0) {
                    holdingSince = since; // continues the previous hold
                }
            }
        } else if (!held && holding) {
            for (Map.Entry<Long, Integer> e : prepared.entrySet()) {
                if (e.getValue() >= batchSize) {
                    heldSince.put(e.getKey(), holdingSince);
                }
            }
        }
        holding = held;
    }

    private boolean laterReadyBehindUnreadyHead() {
        if (ready(head)) {
            return false;
        }
        for (Map.Entry<Long, Integer> e : prepared.entrySet()) {
            if (e.getKey() > head && e.getValue() >= batchSize) {
                return true;
            }
        }
        return false;
    }

    private boolean ready(long batch) {
        return prepared.getOrDefault(batch, 0) >= batchSize;
    }
}
