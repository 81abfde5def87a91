package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.PatchPool;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

/**
 * One device's bounded batch queue, between its task (which {@link #put}s the batches it receives)
 * and the consumer behind it: a training step ({@link TrainerSinkWriter}) or a server for a
 * training process ({@link io.minato.trainer.serve.ServingDevice}). {@link #put} waits while the
 * queue is full, so backpressure, not buffering, holds the source back; {@link QueueAdmission} says
 * when it takes a batch beyond its depth instead, and why.
 *
 * <p>The depth counts the batch being consumed too: it stays at the head until its consumer is done
 * with it, so that a checkpoint taken meanwhile holds it. The queue's lock is the device's one
 * monitor: the consumer guards its own state with it, and signals it when that state changes.
 *
 * <p>Metrics: the gauge {@code queueDepth} (batches held) and {@link QueueAdmission}'s counters.
 */
public final class DeviceQueue {

    /** How long a waiting write waits for a change before it runs the task's mail. */
    static final long MAIL_SLICE_MILLIS = 5;

    // Waits on a consumer that signals no one (a replica group, a training process) poll.
    private static final long POLL_MILLIS = 1;

    private final int device;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final QueueAdmission admission;
    private final QueueAdmission.Consumer consumer;

    // Guarded by lock.
    private final ArrayDeque<Batch> batches = new ArrayDeque<>();
    private Batch arriving; // the batch whose write runs the task's mail; null: none
    private long consumed; // batches removed from the head
    private IOException failure; // the consumer's; null: none

    private volatile int held;
    // Whether the task still consumes the in-flight data of the checkpoint it restored.
    private volatile BooleanSupplier restoring = () -> false;

    /**
     * @param restored batches of a checkpoint, queued first
     */
    DeviceQueue(
            int device,
            int depth,
            QueueAdmission.Consumer consumer,
            Collection<Batch> restored,
            MetricGroup metrics) {
        this.device = device;
        this.admission = new QueueAdmission(depth, metrics);
        this.consumer = consumer;
        batches.addAll(restored);
        held = batches.size();
        metrics.gauge("queueDepth", (Gauge<Integer>) () -> held);
    }

    /**
     * Queues {@code batch}, waiting while the admission says so, and running the task's other work
     * meanwhile through {@code mail} (a yield to the task's mailbox: whether there was a mail to
     * run; null: none). A checkpoint whose barrier overtook the input (unaligned) is taken then,
     * and its state holds {@code batch} as queued: its record was consumed before the barrier.
     *
     * @throws IOException the consumer's failure
     */
    public void put(Batch batch, BooleanSupplier mail) throws IOException, InterruptedException {
        if (batch.device() != device) {
            throw new IllegalStateException(
                    "trainer sink subtask of device "
                            + device
                            + " got batch "
                            + batch.sequence()
                            + " of device "
                            + batch.device()
                            + ": route batches so that device i reaches subtask i");
        }
        lock.lockInterruptibly();
        try {
            long consumedBefore = consumed;
            long stalledSince = -1;
            QueueAdmission.Reason reason;
            while (true) {
                throwIfFailed();
                long now = System.nanoTime();
                if (consumer.stalled()) {
                    stalledSince = stalledSince < 0 ? now : stalledSince;
                } else {
                    stalledSince = -1;
                }
                reason =
                        admission.decide(
                                batches.size(),
                                consumed - consumedBefore,
                                restoring.getAsBoolean(),
                                consumer,
                                stalledSince < 0 ? 0 : now - stalledSince);
                if (reason != null) {
                    break;
                }
                if (mail == null) {
                    awaitChange(Long.MAX_VALUE);
                } else {
                    awaitChange(MAIL_SLICE_MILLIS);
                    runMail(batch, mail);
                }
            }
            admission.admitted(reason);
            batches.addLast(reason.asIdentities() ? identitiesOf(batch) : batch);
            held = batches.size();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs the task's mail while {@code batch} waits to be queued, the lock released: a checkpoint
     * taken meanwhile holds {@code batch} at the queue's tail.
     */
    private void runMail(Batch batch, BooleanSupplier mail) {
        arriving = batch;
        lock.unlock();
        try {
            while (mail.getAsBoolean()) {
                // each mail in turn: a checkpoint's among them
            }
        } finally {
            lock.lock();
            arriving = null;
        }
    }

    /** The batch with its samples' identities only, their patches given back to the pool. */
    static Batch identitiesOf(Batch batch) {
        List<PreparedSample> ids = new ArrayList<>(batch.samples().size());
        for (PreparedSample s : batch.samples()) {
            if (s.patch() != null) {
                PatchPool.jvm().give(s.patch());
            }
            ids.add(s.withPatch(null));
        }
        return batch.withSamples(ids);
    }

    // ---- the consumer's side, under lock() ------------------------------------------------------

    /** The device's monitor. */
    public ReentrantLock lock() {
        return lock;
    }

    /** The batch at the head (under the lock); null when empty. */
    public Batch head() {
        return batches.peekFirst();
    }

    /** The batch behind the head (under the lock); null when none. */
    public Batch second() {
        if (batches.size() < 2) {
            return null;
        }
        var it = batches.iterator();
        it.next();
        return it.next();
    }

    public boolean isEmpty() {
        return batches.isEmpty();
    }

    /** The head is done with, consumed or left out (under the lock). */
    public void removeHead() {
        batches.removeFirst();
        consumed++;
        held = batches.size();
        changed.signalAll();
    }

    /** What a checkpoint taken now holds of the queue (under the lock), the arriving batch last. */
    public List<Batch> snapshot() {
        List<Batch> queued = new ArrayList<>(batches);
        if (arriving != null) {
            queued.add(arriving); // its write runs this checkpoint's mail
        }
        return queued;
    }

    /** Fails every write from now on with {@code e} (under the lock). */
    public void fail(IOException e) {
        if (failure == null) {
            failure = e;
        }
        changed.signalAll();
    }

    /** Whether the consumer failed (under the lock). */
    public boolean failed() {
        return failure != null;
    }

    public void throwIfFailed() throws IOException {
        if (failure != null) {
            throw new IOException(failure.getMessage(), failure.getCause());
        }
    }

    /** Makes {@code what} change under the lock, and wakes whoever waits on the device. */
    public void change(Runnable what) {
        lock.lock();
        try {
            what.run();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes whoever waits on the device (under the lock). */
    public void signal() {
        changed.signalAll();
    }

    /**
     * Waits for a change as {@link #awaitChange(long)} does, briefly, then runs the task's mail
     * ({@code mail}: null for none, and then waits for the change alone), outside the lock: a
     * consumer that waits for the queue to drain at the end of the input lets checkpoints go on.
     */
    public void awaitChange(BooleanSupplier mail) throws InterruptedException {
        if (mail == null) {
            awaitChange(Long.MAX_VALUE);
        } else {
            awaitChange(MAIL_SLICE_MILLIS);
            runMail(null, mail);
        }
    }

    /**
     * Waits for a signalled change, up to {@code atMostMillis} (Long.MAX_VALUE: no limit); polls
     * every {@link #POLL_MILLIS} when the consumer's state changes unsignalled (under the lock).
     */
    public void awaitChange(long atMostMillis) throws InterruptedException {
        long millis = consumer.polled() ? Math.min(atMostMillis, POLL_MILLIS) : atMostMillis;
        if (millis == Long.MAX_VALUE) {
            changed.await();
        } else {
            changed.await(millis, TimeUnit.MILLISECONDS);
        }
    }

    // ---- anyone ---------------------------------------------------------------------------------

    /** Batches held: queued plus the one being consumed. */
    public int held() {
        return held;
    }

    public int depth() {
        return admission.depth();
    }

    /**
     * Tells the queue how to see that its task still consumes the in-flight data of a restored
     * checkpoint: it then takes batches beyond its depth, so that recovery ends, and checkpoints
     * resume, without waiting for the consumer.
     */
    public void whileRestoring(BooleanSupplier restoring) {
        this.restoring = restoring;
    }
}
