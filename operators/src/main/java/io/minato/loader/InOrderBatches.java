package io.minato.loader;

import java.util.HashMap;
import java.util.Map;

/**
 * The batches of a loader that hands them out strictly in order (the in-order and DJL baselines):
 * which of them are prepared, and so whether a ready batch waits behind an unfinished head, which
 * runs the job's {@link HeadOfLine} clock. Safe to call from the workers and the operator thread.
 */
final class InOrderBatches {
    private final int batchSize;
    private final HeadOfLine clock;
    private final Map<Long, Integer> prepared = new HashMap<>();
    private long head;

    /**
     * @param head the number of the first batch to hand out (after a restore, the next one)
     */
    InOrderBatches(int batchSize, long head, HeadOfLine clock) {
        this.batchSize = batchSize;
        this.head = head;
        this.clock = clock;
    }

    /** One more sample of batch {@code batch} is prepared. */
    synchronized void samplePrepared(long batch) {
        if (batch >= head) {
            prepared.merge(batch, 1, Integer::sum);
            update();
        }
    }

    /** Batch {@code batch}, the head, is handed out; the next one is the head now. */
    synchronized void handedOut(long batch) {
        prepared.remove(batch);
        head = Math.max(head, batch + 1);
        update();
    }

    /** Nothing is held any more (the loader closes). */
    synchronized void close() {
        prepared.clear();
        clock.hold(this, false);
    }

    /** Whether a later batch is ready while the head is not. */
    synchronized boolean holding() {
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

    private void update() {
        clock.hold(this, holding());
    }
}
