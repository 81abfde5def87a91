package io.minato.trainer;

import io.minato.loader.Threads;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.PatchPool;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One device's trainer: one worker thread that trains an {@link Accelerator} on the batches of the
 * device's {@link DeviceQueue}, the batch in training at the queue's head until its step ends.
 * Replicas of several devices train in lockstep through a {@link ReplicaGroup}.
 *
 * <p>A checkpoint waits for the running step to end (or to park in the replicas' all-reduce, which
 * has not touched the model, or to have begun with the model captured: {@link StepStartCapture}),
 * holds the worker while the model is captured, and writes the capture's bytes once training goes
 * on.
 */
public final class TrainerSinkWriter implements DeviceWriter, QueueAdmission.Consumer {

    private static final Logger LOG = LoggerFactory.getLogger(TrainerSinkWriter.class);
    private static final long CLOSE_JOIN_MILLIS = 60_000;

    private final DeviceAccount account;
    private final DeviceQueue queue;
    private final ReentrantLock lock; // the queue's: the device's one monitor
    private final int device;
    private final Accelerator accelerator;
    private final ReplicaGroup.Member member; // null: the accelerator trains alone
    private final Thread worker;
    // A replica's states taken at the group's cuts after its input ended, by checkpoint; the
    // task's thread only. Flink takes one checkpoint at a time by default: one entry at most.
    private final TreeMap<Long, TrainerWriterState> takenAtCuts = new TreeMap<>();

    // Guarded by lock.
    private volatile boolean
            prepared; // the accelerator is ready: written under lock, read anywhere
    private boolean stepRunning; // the queue's head is in training
    private int pendingSnapshots; // checkpoints holding the worker at the next step boundary
    private boolean closing;
    private boolean inputEnded;
    private boolean trainingOver; // every replica is out of data
    private StepStartCapture stepStart; // the model as the running step began; null: none taken
    private long lastStepNanos; // the worker's only

    /** Trains {@code accelerator} behind a queue; restores it from {@code context.restored()}. */
    TrainerSinkWriter(DeviceAccount.Context context, Accelerator accelerator) throws IOException {
        this.device = context.device();
        this.accelerator = accelerator;
        DeviceAccount.checkRestoredDevice(context);
        if (context.restored() != null) {
            try {
                accelerator.restore(context.restored().consumerState());
            } catch (Exception e) {
                throw new IOException("device " + device + ": cannot restore the model state", e);
            }
        }
        this.account = new DeviceAccount(context, this, accelerator);
        this.queue = account.queue();
        this.lock = queue.lock();
        if (accelerator.replicated()) {
            member = context.replicas().join(context.groupId(), context.devices(), device);
            accelerator.replicate(member);
        } else {
            member = null;
        }
        worker = new Thread(this::runWorker, "trainer-device-" + device);
        worker.setDaemon(true);
        worker.start();
    }

    // ---- what the queue's admission asks (under the lock) ---------------------------------------

    @Override
    public boolean ready() {
        return prepared;
    }

    @Override
    public boolean cutPending() {
        return member != null && member.cutPending();
    }

    @Override
    public boolean peerStarving() {
        return member != null && member.othersStarving();
    }

    @Override
    public boolean polled() {
        return member != null; // the replica group signals no writer
    }

    // ---- the end of the input -------------------------------------------------------------------

    /**
     * At end of input, waits until every queued batch is trained, lets the accelerator keep its
     * result (the model) and writes the summary.
     *
     * <p>A trainer alone runs the task's mail while it waits, so a checkpoint is taken as during
     * training: at the running step's start ({@link StepStartCapture}) or its end, with the batches
     * still queued. A replica's task snapshots nothing while it waits here, yet its replicas go on
     * checkpointing. So it takes its state itself at every cut of the group meanwhile, and {@link
     * #snapshotState} gives that state when Flink asks for the checkpoint, once training is over:
     * every replica's state in a checkpoint is at the same global step.
     */
    @Override
    public void endInput(BooleanSupplier mail) throws IOException, InterruptedException {
        if (member != null) {
            member.end();
        }
        queue.change(() -> inputEnded = true);
        long cut;
        while ((cut = awaitTrainedOrCut(member == null ? mail : null)) >= 0) {
            takenAtCuts.put(cut, take(cut));
        }
        account.finish();
    }

    /**
     * Waits until every queued batch is trained and training is over (-1), or until a cut holds the
     * replica group for a checkpoint whose state this writer has not taken yet (its id); runs
     * {@code mail} meanwhile (null: none).
     */
    private long awaitTrainedOrCut(BooleanSupplier mail) throws IOException, InterruptedException {
        lock.lockInterruptibly();
        try {
            while (true) {
                queue.throwIfFailed();
                if (queue.isEmpty() && (member == null || trainingOver)) {
                    return -1;
                }
                long cut = member == null ? -1 : member.pendingCut();
                if (cut >= 0 && !takenAtCuts.containsKey(cut)) {
                    return cut;
                }
                queue.awaitChange(mail);
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- checkpoints ----------------------------------------------------------------------------

    /**
     * Waits for the current step to end, then captures the queue, counters and model state. The
     * step is held only while the model is captured: its bytes are written once training goes on. A
     * replica whose input ended gives the state it took at this checkpoint's cut, if any.
     */
    @Override
    public List<TrainerWriterState> snapshotState(long checkpointId) throws IOException {
        TrainerWriterState atCut = takenAtCuts.remove(checkpointId);
        takenAtCuts.headMap(checkpointId).clear(); // checkpoints that were aborted
        return List.of(atCut != null ? atCut : take(checkpointId));
    }

    /** The state at the next step boundary, the group cut there for {@code checkpointId}. */
    private TrainerWriterState take(long checkpointId) throws IOException {
        try {
            lock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted before checkpoint " + checkpointId);
        }
        Accelerator.Capture model = null;
        boolean captured = false;
        TrainerWriterState at;
        try {
            // Holds the worker at the next step boundary, so a busy queue cannot starve this.
            pendingSnapshots++;
            if (member != null) {
                member.cut(checkpointId); // every replica snapshots the same global step
            }
            // A step parked in the all-reduce has not touched the model: a boundary too. So is
            // one that began with a capture of the model: the state as of its start.
            while (!queue.failed()
                    && stepRunning
                    && stepStart == null
                    && !(member != null && member.parked())) {
                queue.awaitChange(Long.MAX_VALUE);
            }
            queue.throwIfFailed();
            model = stepRunning && stepStart != null ? stepStart.share() : accelerator.capture();
            at = account.state(new byte[0]);
            if (member != null) {
                member.snapshotted(checkpointId);
            }
            captured = true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while taking checkpoint " + checkpointId);
        } catch (IOException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException("device " + device + ": cannot snapshot the model state", e);
        } finally {
            pendingSnapshots--;
            queue.signal();
            lock.unlock();
            if (!captured && model != null) {
                model.close();
            }
        }
        try (Accelerator.Capture state = model) {
            return new TrainerWriterState(
                    device, at.queued(), at.counters(), state.bytes(), at.traceLength());
        } catch (Exception e) {
            throw new IOException("device " + device + ": cannot write the model state", e);
        }
    }

    // ---- closing --------------------------------------------------------------------------------

    /**
     * Stops the worker (interrupting a running step) and the GPU sampling, writes the summary,
     * closes resources (the GPU monitor included).
     */
    @Override
    public void close() throws IOException {
        queue.change(() -> closing = true);
        boolean ended = account.endedNormally();
        if (member != null && !ended) {
            member.leave(); // wakes replicas waiting for this one
        }
        worker.interrupt();
        // A step runs in native code, deaf to the interrupt: the accelerator's arrays are freed
        // only once it ended, or libtorch reads freed memory and the whole TaskManager goes down.
        // A cancelled task's thread is interrupted too, so the wait goes on through interrupts.
        boolean stopped = Threads.awaitEnd(worker, CLOSE_JOIN_MILLIS);
        if (!stopped) {
            LOG.warn(
                    "Trainer of device {} did not stop within {} ms; its accelerator is left open"
                            + " rather than freed under a running step",
                    device,
                    CLOSE_JOIN_MILLIS);
        }
        try {
            try {
                account.close();
            } finally {
                if (stopped) {
                    accelerator.close();
                }
            }
        } finally {
            if (member != null && ended) {
                // After this device's summary is written: replica 0's link closes once every
                // replica has left.
                member.leave();
            }
            account.endRunIfLast();
        }
    }

    @Override
    public DeviceAccount account() {
        return account;
    }

    // ---- the worker -----------------------------------------------------------------------------

    private void runWorker() {
        long step = -1;
        boolean starving = false; // what the replica group was last told
        try {
            // Outside any step: a checkpoint need not wait for a cold start (the model built,
            // restored and shared with the replicas).
            accelerator.prepare();
            queue.change(() -> prepared = true);
            while (true) {
                Batch batch;
                Batch next;
                lock.lock();
                try {
                    while (!closing && (pendingSnapshots > 0 || (queue.isEmpty() && !idle()))) {
                        if (member != null && !starving && queue.isEmpty() && !inputEnded) {
                            // The other devices' writers now take batches beyond their queues.
                            starving = true;
                            member.starving(true);
                        }
                        queue.awaitChange(Long.MAX_VALUE);
                    }
                    if (closing) {
                        return;
                    }
                    batch = queue.head();
                    next = queue.second();
                    step = account.counters().steps();
                    stepRunning = true;
                } finally {
                    lock.unlock();
                }
                if (starving) {
                    starving = false;
                    member.starving(false);
                }
                if (batch == null) {
                    idleStep();
                } else {
                    train(batch, next, step);
                }
            }
        } catch (Throwable t) {
            if (member != null && !(t instanceof InterruptedException)) {
                member.abort(t);
            }
            lock.lock();
            try {
                if (!closing) {
                    queue.fail(
                            new IOException(
                                    "device "
                                            + device
                                            + ": training step "
                                            + step
                                            + " failed: "
                                            + t,
                                    t));
                }
                stepRunning = false;
                queue.signal();
            } finally {
                lock.unlock();
            }
        }
    }

    /** One step over the queue's head {@code batch}, {@code next} behind it (null: none yet). */
    private void train(Batch batch, Batch next, long step) throws Exception {
        // Preparing a sample again is the loader's work, not the device's: before the step's
        // clock starts.
        Batch full = account.materialized(batch, task -> true);
        if (full.samples().isEmpty()) {
            // Every sample was left out (--on-bad-sample skip): alone, no step; a replica joins
            // the others' step empty-handed.
            accelerator.stepWithoutSamples();
            queue.change(this::headDone);
            return;
        }
        // Replicas cut the group at one global step instead.
        StepStartCapture captured =
                member == null ? StepStartCapture.ifWorth(accelerator, lastStepNanos) : null;
        if (captured != null) {
            queue.change(() -> stepStart = captured);
        }
        long startMillis = System.currentTimeMillis();
        long start = System.nanoTime();
        StepResult result;
        try {
            // The next batch as queued now, for the accelerator to stage during this step.
            result = accelerator.train(full, next);
        } finally {
            if (captured != null) {
                queue.change(() -> stepStart = null);
                captured.release();
            }
        }
        long end = System.nanoTime();
        long endMillis = System.currentTimeMillis();
        lastStepNanos = end - start;
        lock.lock();
        try {
            account.stepped(full, step, result, start, end, startMillis, endMillis);
            headDone();
        } finally {
            lock.unlock();
        }
        // The step is over and the batch has left the queue: nothing refers to its patches now,
        // so the next samples may reuse their arrays.
        for (PreparedSample s : full.samples()) {
            PatchPool.jvm().give(s.patch());
        }
    }

    /** The queue's head is done with, trained or left out (under the lock). */
    private void headDone() {
        stepRunning = false;
        queue.removeHead();
    }

    /** Out of data while replicas still train: this device joins their steps empty-handed. */
    private boolean idle() {
        return inputEnded && member != null && !trainingOver;
    }

    private void idleStep() throws Exception {
        boolean more = accelerator.idleStep();
        queue.change(
                () -> {
                    trainingOver = !more;
                    stepRunning = false;
                });
    }
}
