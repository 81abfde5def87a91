package io.minato.loader.baseline;

import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import io.minato.sample.SampleTask;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@link DjlLoader}'s tasks received so far, in order (index i is the i-th task of this (re)start),
 * and {@link Sampler DJL's sampler} over them.
 */
final class DjlFeed {
    private final int batchSize;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition added = lock.newCondition();
    private final List<SampleTask> tasks = new ArrayList<>();
    private boolean ended;
    private boolean draining; // a checkpoint waits for the batches at hand
    private long sampled; // tasks handed to DJL's sampler, in whole batches

    DjlFeed(int batchSize) {
        this.batchSize = batchSize;
    }

    void add(SampleTask task) {
        lock.lock();
        try {
            tasks.add(task);
            added.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void end() {
        lock.lock();
        try {
            ended = true;
            added.signalAll();
        } finally {
            lock.unlock();
        }
    }

    SampleTask get(long index) {
        lock.lock();
        try {
            return tasks.get(Math.toIntExact(index));
        } finally {
            lock.unlock();
        }
    }

    /** Tasks received and not yet handed to DJL's sampler. */
    long unsampled() {
        lock.lock();
        try {
            return tasks.size() - sampled;
        } finally {
            lock.unlock();
        }
    }

    /** Full batches among the tasks received so far. */
    long fullBatches() {
        lock.lock();
        try {
            return tasks.size() / batchSize;
        } finally {
            lock.unlock();
        }
    }

    /** The tasks that do not fill a batch yet. */
    List<SampleTask> remainder() {
        lock.lock();
        try {
            int whole = tasks.size() / batchSize * batchSize;
            return List.copyOf(tasks.subList(whole, tasks.size()));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until {@code batches} whole batches of tasks are unsampled, or at least one is and
     * input ended or a checkpoint waits for them (true); false when input ended without one.
     */
    boolean awaitBatches(int batches) throws InterruptedException {
        lock.lockInterruptibly();
        try {
            while (tasks.size() < sampled + (long) batchSize * batches
                    && !((ended || draining) && tasks.size() >= sampled + batchSize)
                    && !(ended && tasks.size() < sampled + batchSize)) {
                added.await();
            }
            return tasks.size() >= sampled + batchSize;
        } finally {
            lock.unlock();
        }
    }

    /** Whether a checkpoint waits for the batches at hand to be emitted. */
    void draining(boolean on) {
        lock.lock();
        try {
            draining = on;
            added.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The next batch's indices if its tasks are here, else null; never waits. */
    List<Long> nextBatch() {
        lock.lock();
        try {
            if (tasks.size() < sampled + batchSize) {
                return null;
            }
            List<Long> indices = new ArrayList<>(batchSize);
            for (int i = 0; i < batchSize; i++) {
                indices.add(sampled + i);
            }
            sampled += batchSize;
            return indices;
        } finally {
            lock.unlock();
        }
    }

    /** Tasks per batch. */
    int batchSize() {
        return batchSize;
    }

    /** DJL's sampler over the feed: consecutive runs of B tasks, those that have arrived. */
    static final class Sampling implements Sampler {
        private final DjlFeed feed;

        Sampling(DjlFeed feed) {
            this.feed = feed;
        }

        @Override
        public Iterator<List<Long>> sample(RandomAccessDataset dataset) {
            return new Iterator<>() {
                private List<Long> next;

                @Override
                public boolean hasNext() {
                    if (next == null) {
                        next = feed.nextBatch();
                    }
                    return next != null;
                }

                @Override
                public List<Long> next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    List<Long> out = next;
                    next = null;
                    return out;
                }
            };
        }

        @Override
        public int getBatchSize() {
            return feed.batchSize;
        }
    }
}
