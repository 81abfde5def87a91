package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.loader.Threads;
import io.minato.loader.WorkerScheduler;
import io.minato.loader.pacing.QueueReport;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.PatchPool;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.gpu.GpuSampler;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.apache.flink.metrics.MetricGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One device's trainer: a bounded queue of batches in front of one worker thread that trains on
 * them. {@link #write} blocks while the queue is full, so backpressure, not buffering, holds the
 * source back.
 *
 * <p>The queue depth counts the batch in training too: it stays at the queue's head until its step
 * ends, so with depth Q the writer holds Q batches (Q - 1 prefetched while one trains). It takes
 * more only where waiting for a step would hold up a checkpoint: while its task restores, while the
 * model prepares (up to {@link #PREPARING_DEPTHS} Q), while another replica starves or a cut holds
 * the group, or a step is parked for long. A write waits for two steps at most, so a longer queue
 * drains by one batch a write. While it waits, it runs its task's mail when given it: an unaligned
 * checkpoint is taken meanwhile, the waiting batch in its queue.
 *
 * <p>Its trace, summary and model go through {@link DeviceOutputs}. When the accelerator trains on
 * a GPU ({@link Accelerator#gpuMonitor()}), the writer reads it every {@link
 * GpuSampler#DEFAULT_PERIOD} on a daemon thread for the summary's GPU statistics, and exports the
 * gauges {@value GpuMonitor#UTILIZATION_GAUGE} and {@value GpuMonitor#MEMORY_USED_GAUGE}; without a
 * GPU there is no such thread and the gauges read -1.
 */
public final class TrainerSinkWriter implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(TrainerSinkWriter.class);
    private static final long CLOSE_JOIN_MILLIS = 60_000;

    // Waits that depend on the replica group, which signals no writer, poll at this period.
    private static final long GROUP_POLL_MILLIS = 1;

    /** How many queue depths the writer takes while the accelerator prepares. */
    static final int PREPARING_DEPTHS = 4;

    /** How long a waiting write waits for a change before it runs the task's mail. */
    static final long MAIL_SLICE_MILLIS = 5;

    /** How long a write waits for a parked step before it takes the batch beyond the depth. */
    static final long PARKED_TAKE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final int device;
    private final int devices;
    private final String groupId;
    private final Replicas replicas;
    private TrainerSink.RunEnd runEnd; // null: nothing to do at the run's end
    private volatile boolean endedNormally;
    private final int queueDepth;
    // Whether the task still consumes the in-flight data of the checkpoint it restored.
    private volatile BooleanSupplier restoring = () -> false;
    private boolean prepared; // the accelerator is ready for its first step (guarded by lock)
    private long taken; // batches the worker took off the queue (guarded by lock)
    private final Accelerator accelerator;
    private final SampleRecipe recipe; // null: every sample must arrive with its patch
    private final SamplesPreparedAgain preparedAgain;
    private final DeviceOutputs outputs;
    private final Path outputDir; // null: no summary
    private final Thread worker;
    private final ReplicaGroup.Member member; // null: the accelerator trains alone
    // A replica's states taken at the group's cuts after its input ended, by checkpoint; the
    // task's thread only. Flink takes one checkpoint at a time by default: one entry at most.
    private final TreeMap<Long, TrainerWriterState> takenAtCuts = new TreeMap<>();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Guarded by lock. The head is the batch in training while stepRunning.
    private final ArrayDeque<Batch> queue = new ArrayDeque<>();
    private Batch arriving; // the batch whose write runs the task's mail; null: none
    private boolean stepRunning;
    private int pendingSnapshots;
    private boolean closing;
    private boolean inputEnded;
    private boolean trainingOver; // every replica is out of data
    private IOException failure; // null: none
    private final StepClock clock;

    // Written under lock; volatile for metric reporters.
    private volatile DeviceCounters counters;
    private volatile int held;
    private final WorkerScheduler.Registration scheduling;

    private final TrainerMetrics metrics;

    TrainerSinkWriter(
            int device,
            int queueDepth,
            Accelerator accelerator,
            Path traceDir,
            Path outputDir,
            MetricGroup metrics,
            TrainerWriterState restored)
            throws IOException {
        this(
                device,
                1,
                "solo-" + UUID.randomUUID(),
                Replicas.inJvm(),
                queueDepth,
                accelerator,
                null,
                traceDir,
                outputDir,
                metrics,
                restored);
    }

    /**
     * @param devices how many devices' replicas train together
     * @param groupId the same for every replica of one run (attempt)
     * @param replicas how this device finds the others, wherever they run
     */
    TrainerSinkWriter(
            int device,
            int devices,
            String groupId,
            Replicas replicas,
            int queueDepth,
            Accelerator accelerator,
            SampleRecipe recipe,
            Path traceDir,
            Path outputDir,
            MetricGroup metrics,
            TrainerWriterState restored)
            throws IOException {
        if (queueDepth < 1) {
            throw new IllegalArgumentException("queue depth must be >= 1: " + queueDepth);
        }
        this.device = device;
        this.devices = devices;
        this.groupId = groupId;
        this.replicas = replicas;
        this.queueDepth = queueDepth;
        this.accelerator = accelerator;
        this.recipe = recipe;
        this.outputDir = outputDir;
        this.counters = restored == null ? DeviceCounters.ZERO : restored.counters();
        if (restored != null) {
            if (restored.device() != device) {
                throw new IOException(
                        "trainer sink subtask of device "
                                + device
                                + " got the state of device "
                                + restored.device()
                                + ": the sink's parallelism must equal the number of devices");
            }
            try {
                accelerator.restore(restored.acceleratorState());
            } catch (Exception e) {
                throw new IOException("device " + device + ": cannot restore the model state", e);
            }
            queue.addAll(restored.queued());
        }
        this.held = queue.size();
        this.outputs =
                new DeviceOutputs(
                        device,
                        accelerator,
                        traceDir,
                        restored == null ? 0 : restored.traceLength(),
                        recipe,
                        outputDir,
                        metrics,
                        this::counters);
        this.metrics = new TrainerMetrics(metrics, counters, () -> held, this::counters);
        this.preparedAgain = new SamplesPreparedAgain(device, recipe, this.metrics);

        if (accelerator.replicated()) {
            member = replicas.join(groupId, devices, device);
            accelerator.replicate(member);
        } else {
            member = null;
        }

        // The worker scheduler of this TaskManager paces the preparation by how full the queues
        // are; the workers of others hear of this queue through the job (TrainerOperator).
        WorkerScheduler scheduler = WorkerScheduler.of(groupId, metrics);
        clock = new StepClock();
        scheduling = scheduler.queue(() -> held, queueDepth);
        if (outputDir != null) {
            TrainingProgress.of(outputDir).register(device, this::counters, scheduler);
        }
        worker = new Thread(this::runWorker, "trainer-device-" + device);
        worker.setDaemon(true);
        worker.start();
    }

    /** Queues {@code batch}, waiting while the queue is full; runs no other work meanwhile. */
    public void write(Batch batch) throws IOException, InterruptedException {
        write(batch, null);
    }

    /**
     * Queues {@code batch}, waiting while the queue is full, and running the task's other work
     * meanwhile through {@code mail} (a yield to the task's mailbox: whether there was a mail to
     * run; null: none). A checkpoint whose barrier overtook the input (unaligned) is taken then,
     * and its state holds {@code batch} as queued: its record was consumed before the barrier.
     */
    public void write(Batch batch, BooleanSupplier mail) throws IOException, InterruptedException {
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
            // Replicas: never hold the upstream back while another device starves, nor while a
            // checkpoint cut holds the group. A starving device's batches may sit behind this
            // device's samples in the shared operators upstream, and the step waits for it; while
            // a cut holds, the task must reach its barrier. Either way the batch is taken beyond
            // the queue's depth rather than wait for a step that cannot end.
            // And never while the task restores: Flink takes no checkpoint until it has consumed
            // the in-flight data of the one it restored, and those batches are few (what the
            // network buffers held) and checkpointed as identities in the queue anyway.
            // While the accelerator prepares (a model built and restored, about a second), no
            // step frees the queue: up to PREPARING_DEPTHS depths are taken, so that the task
            // reaches the first checkpoint's barrier rather than wait for the first step.
            // A write waits for two steps at most: a queue longer than its depth (taken while the
            // task restored, say) drains by one batch a write rather than all before the next
            // write, which would hold the task, and a checkpoint's barrier with it, for the whole
            // backlog. It must drain before the input ends: the task trains what is queued then
            // inside endInput, where it takes no checkpoint.
            // While it waits, the task's mail runs (when the operator gives its mailbox): an
            // unaligned checkpoint's barrier overtakes the input and is taken meanwhile.
            // A step parked for long (a device served to a process that is not connected) waits
            // until the process returns, and an aligned barrier (a savepoint's) waits in the
            // input behind this batch: once a second a batch is taken beyond the depth, as
            // identities, so that the task reaches it. The workers prepare one batch a second
            // for nothing meanwhile; the trainer prepares it again when its turn comes.
            long takenBefore = taken;
            long parkedSince = -1;
            boolean parkedTooLong = false;
            while (failure == null
                    && queue.size() >= (prepared ? queueDepth : queueDepth * PREPARING_DEPTHS)
                    && taken - takenBefore < 2
                    && !restoring.getAsBoolean()
                    && !(member != null && (member.cutPending() || member.othersStarving()))) {
                if (accelerator.parked()) {
                    long now = System.nanoTime();
                    parkedSince = parkedSince < 0 ? now : parkedSince;
                    if (now - parkedSince >= PARKED_TAKE_NANOS) {
                        parkedTooLong = true;
                        break;
                    }
                } else {
                    parkedSince = -1;
                }
                if (mail == null) {
                    awaitChange();
                } else {
                    awaitChange(MAIL_SLICE_MILLIS);
                    runMail(batch, mail);
                }
            }
            throwIfFailed();
            if (parkedTooLong && recipe != null) {
                batch = identitiesOf(batch);
            }
            queue.addLast(batch);
            held = queue.size();
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
    private static Batch identitiesOf(Batch batch) {
        List<PreparedSample> ids = new ArrayList<>(batch.samples().size());
        for (PreparedSample s : batch.samples()) {
            if (s.patch() != null) {
                PatchPool.jvm().give(s.patch());
            }
            ids.add(s.withPatch(null));
        }
        return batch.withSamples(ids);
    }

    /**
     * At end of input, waits until every queued batch is trained, lets the accelerator keep its
     * result (the model) and writes the summary.
     *
     * <p>A replica's task snapshots nothing while it waits here, yet its replicas go on
     * checkpointing. So it takes its state itself at every cut of the group meanwhile, and {@link
     * #snapshotState} gives that state when Flink asks for the checkpoint, once training is over:
     * every replica's state in a checkpoint is at the same global step.
     */
    public void endInput() throws IOException, InterruptedException {
        if (member != null) {
            member.end();
        }
        change(() -> inputEnded = true);
        long cut;
        while ((cut = awaitTrainedOrCut()) >= 0) {
            takenAtCuts.put(cut, take(cut));
        }
        outputs.finish();
        endedNormally = true;
    }

    /**
     * Waits until every queued batch is trained and training is over (-1), or until a cut holds the
     * replica group for a checkpoint whose state this writer has not taken yet (its id).
     */
    private long awaitTrainedOrCut() throws IOException, InterruptedException {
        lock.lockInterruptibly();
        try {
            while (true) {
                throwIfFailed();
                if (queue.isEmpty() && (member == null || trainingOver)) {
                    return -1;
                }
                long cut = member == null ? -1 : member.pendingCut();
                if (cut >= 0 && !takenAtCuts.containsKey(cut)) {
                    return cut;
                }
                awaitChange();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Runs {@code end} once per run attempt, when its last device closes. */
    void onRunEnd(TrainerSink.RunEnd end) {
        this.runEnd = end;
    }

    /**
     * Waits for the current step to end, then captures the queue, counters and model state. The
     * step is held only while the model is captured: its bytes are written once training goes on. A
     * replica whose input ended gives the state it took at this checkpoint's cut, if any.
     */
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
        List<Batch> queued;
        DeviceCounters at;
        long traceLength;
        try {
            // Holds the worker at the next step boundary, so a busy queue cannot starve this.
            pendingSnapshots++;
            if (member != null) {
                member.cut(checkpointId); // every replica snapshots the same global step
            }
            // A step parked in the all-reduce has not touched the model: a boundary too.
            while (failure == null
                    && stepRunning
                    && !(member != null && member.parked())
                    && !accelerator.parked()) {
                awaitChange();
            }
            throwIfFailed();
            model = accelerator.capture();
            queued = new ArrayList<>(queue);
            if (arriving != null) {
                queued.add(arriving); // its write runs this checkpoint's mail
            }
            at = counters;
            traceLength = outputs.traceLength();
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
            changed.signalAll();
            lock.unlock();
            if (!captured && model != null) {
                model.close();
            }
        }
        try (Accelerator.Capture state = model) {
            return new TrainerWriterState(device, queued, at, state.bytes(), traceLength);
        } catch (Exception e) {
            throw new IOException("device " + device + ": cannot write the model state", e);
        }
    }

    /**
     * Stops the worker (interrupting a running step) and the GPU sampling, writes the summary,
     * closes resources (the GPU monitor included).
     */
    @Override
    public void close() throws IOException {
        change(() -> closing = true);
        if (member != null && !endedNormally) {
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
        scheduling.close();
        try {
            try {
                outputs.close();
            } finally {
                if (stopped) {
                    accelerator.close();
                }
            }
        } finally {
            if (member != null && endedNormally) {
                // After this device's summary is written: replica 0's link closes once every
                // replica has left.
                member.leave();
            }
            endRunIfLast();
        }
    }

    /**
     * Runs the run's end in the last device to close after its last step, in whichever TaskManager:
     * then every summary is written, and every upstream operator has closed too (a task closes
     * after all its inputs ended, and they end when the tasks feeding them closed).
     */
    private void endRunIfLast() {
        if (runEnd == null || !endedNormally || outputDir == null) {
            return;
        }
        try {
            if (replicas.ended(groupId, device, devices)) {
                runEnd.ended(outputDir);
            }
        } catch (Exception e) {
            LOG.error("device {}: the run ended, but what follows its end failed", device, e);
        }
    }

    /** What this device has done so far. */
    public DeviceCounters counters() {
        return counters;
    }

    /** What this device's GPU read since this writer started; empty without a GPU or reading. */
    public Optional<GpuStats> gpuStats() {
        return outputs.gpuStats();
    }

    /**
     * Tells the writer how to see that its task still consumes the in-flight data of a restored
     * checkpoint: it then takes batches beyond its queue, so that recovery ends, and checkpoints
     * resume, without waiting for those batches' steps.
     */
    void whileRestoring(BooleanSupplier restoring) {
        this.restoring = restoring;
    }

    /**
     * Under {@code --on-bad-sample skip}: a sample this trainer prepares again (after a restore)
     * whose source went bad is left out and its source quarantined, as the workers do.
     */
    void leaveOutBadSamples(SampleRecipe.LeftOut quarantine) {
        preparedAgain.leaveOutBadSamples(quarantine);
    }

    /** The device's queue now, as it tells the job's worker schedulers. */
    QueueReport queue() {
        return new QueueReport(device, held, queueDepth);
    }

    /** Samples that arrived without their patch and were prepared here again. */
    public long preparedAgain() {
        return metrics.preparedAgain();
    }

    /** Batches held: queued plus the one in training. */
    public int queued() {
        return held;
    }

    public int device() {
        return device;
    }

    /** Whether the accelerator has prepared for its first step. */
    boolean prepared() {
        lock.lock();
        try {
            return prepared;
        } finally {
            lock.unlock();
        }
    }

    /** Makes {@code what} change under the lock, and wakes whoever waits on it. */
    private void change(Runnable what) {
        lock.lock();
        try {
            what.run();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The queue's head is done with, trained or left out (under the lock). */
    private void headDone() {
        queue.removeFirst();
        taken++;
        held = queue.size();
        stepRunning = false;
        changed.signalAll();
    }

    private void runWorker() {
        long step = -1;
        boolean starving = false; // what the replica group was last told
        try {
            // Outside any step: a checkpoint need not wait for a cold start (the model built,
            // restored and shared with the replicas).
            accelerator.prepare();
            change(() -> prepared = true);
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
                        changed.await();
                    }
                    if (closing) {
                        return;
                    }
                    Iterator<Batch> queued = queue.iterator();
                    batch = queued.hasNext() ? queued.next() : null;
                    next = queued.hasNext() ? queued.next() : null;
                    step = counters.steps();
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
                    continue;
                }

                // Preparing a sample again is the loader's work, not the device's: before the
                // step's clock starts, and only for the samples the device takes.
                Batch full = preparedAgain.materialized(taken(batch));
                if (full.samples().isEmpty()) {
                    // Every sample of the batch was left out (--on-bad-sample skip, or not taken
                    // by the device): alone, no step; a replica joins the others' step
                    // empty-handed.
                    accelerator.stepWithoutSamples();
                    lock.lock();
                    try {
                        headDone();
                    } finally {
                        lock.unlock();
                    }
                    continue;
                }
                long startMillis = System.currentTimeMillis();
                long start = System.nanoTime();
                // The next batch as queued now, for the accelerator to stage during this step.
                StepResult result = accelerator.train(full, next);
                long end = System.nanoTime();
                long endMillis = System.currentTimeMillis();
                // Trace lines only for completed steps, before the step counts as done, so that a
                // checkpoint's committed trace length covers exactly its steps.
                outputs.traceStep(full, step, startMillis, endMillis);

                lock.lock();
                try {
                    DeviceCounters before = counters;
                    DeviceCounters after =
                            clock.counted(before, full, result, start, end, startMillis, endMillis);
                    counters = after;
                    // Metrics before the step counts as done: a drained queue shows them all.
                    metrics.step(before, after, full.samples().size());
                    headDone();
                } finally {
                    lock.unlock();
                }
                // The step is over and the batch has left the queue: nothing refers to its
                // patches now, so the next samples may reuse their arrays.
                for (PreparedSample s : full.samples()) {
                    PatchPool.jvm().give(s.patch());
                }
            }
        } catch (Throwable t) {
            if (member != null && !(t instanceof InterruptedException)) {
                member.abort(t);
            }
            lock.lock();
            try {
                if (!closing) {
                    failure =
                            new IOException(
                                    "device "
                                            + device
                                            + ": training step "
                                            + step
                                            + " failed: "
                                            + t,
                                    t);
                }
                stepRunning = false;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * The batch without the samples the accelerator does not take ({@link Accelerator#takes}): they
     * are neither trained nor traced, and the report counts them dropped.
     */
    private Batch taken(Batch batch) {
        List<PreparedSample> samples = batch.samples();
        List<PreparedSample> kept = null; // the batch as it is until a sample is left out
        for (int i = 0; i < samples.size(); i++) {
            PreparedSample s = samples.get(i);
            // A sample left out keeps its patch: the queued batch still refers to it until the
            // step is over, and the few such samples of a run are not worth the pool.
            if (!accelerator.takes(s.task())) {
                if (kept == null) {
                    kept = new ArrayList<>(samples.subList(0, i));
                }
            } else if (kept != null) {
                kept.add(s);
            }
        }
        return kept == null ? batch : batch.withSamples(kept);
    }

    /** Out of data while replicas still train: this device joins their steps empty-handed. */
    private boolean idle() {
        return inputEnded && member != null && !trainingOver;
    }

    private void idleStep() throws Exception {
        boolean more = accelerator.idleStep();
        change(
                () -> {
                    trainingOver = !more;
                    stepRunning = false;
                });
    }

    /**
     * Waits for a signal; polls while a replica group or a parked step may change what is awaited.
     */
    private void awaitChange() throws InterruptedException {
        awaitChange(Long.MAX_VALUE);
    }

    /**
     * Waits for a signalled change, up to {@code atMostMillis}; what the replica group or a parked
     * step change signals no one, so then it polls every {@link #GROUP_POLL_MILLIS} at most.
     */
    private void awaitChange(long atMostMillis) throws InterruptedException {
        long millis =
                member == null && !accelerator.mayPark()
                        ? atMostMillis
                        : Math.min(atMostMillis, GROUP_POLL_MILLIS);
        if (millis == Long.MAX_VALUE) {
            changed.await();
        } else {
            changed.await(millis, TimeUnit.MILLISECONDS);
        }
    }

    private void throwIfFailed() throws IOException {
        if (failure != null) {
            throw new IOException(failure.getMessage(), failure.getCause());
        }
    }
}
