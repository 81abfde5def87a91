package io.minato.loader;

import io.minato.data.BadInputException;
import io.minato.loader.pacing.JobQueues;
import io.minato.loader.pacing.WithCoordinator;
import io.minato.loader.pacing.WorkerRunning;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SampleTask;
import io.minato.sample.serde.SampleTypes;
import io.minato.spi.PatchPool;
import io.minato.spi.Workload;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.runtime.operators.coordination.OperatorEventGateway;
import org.apache.flink.runtime.operators.coordination.OperatorEventHandler;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the fast and the slow workers share: the workload, the deal to devices, a share of the
 * handoff, the case cache's metrics, and, when the {@link WorkerScheduler} paces them, the permit
 * to prepare.
 *
 * <p>A worker waiting for a permit runs its task's mail, so checkpoints go on while it waits (an
 * idle worker never holds an unaligned barrier back). A checkpoint taken then has consumed the
 * element in hand without its result: the element's task is operator state ("waiting"), and a
 * restore prepares it again from the start, with the same bytes. Operators are needed for that (a
 * ProcessFunction has no mailbox and no hook before the snapshot).
 *
 * <p>Under {@link #skippingBadSamples} a sample whose preparation meets bad input (a file truncated
 * or replaced since the run checked it, pixels that do not decode) is quarantined instead of
 * failing the job: left out, and with it every later sample of the same source that this worker is
 * given, for the rest of the run. What was quarantined, and how many samples were left out, is
 * operator state ({@link Quarantine}), so that a restore neither trains a quarantined sample nor
 * counts one twice; the accumulators {@link #QUARANTINED} and {@link #SAMPLES_SKIPPED} carry them
 * to the report.
 *
 * @param <IN> what the worker takes: a task, or a sample left unfinished on the fast path
 */
abstract class PreparingOperator<IN> extends ReceivingOperator<PreparedSample>
        implements OneInputStreamOperator<IN, PreparedSample>,
                OperatorEventHandler,
                WithCoordinator.Coordinated {
    private static final Logger LOG = LoggerFactory.getLogger(PreparingOperator.class);
    private static final long serialVersionUID = 1L;

    /** How long a worker waits for room in the handoff before it looks at its mail again. */
    static final long ROOM_SLICE_MILLIS = 5;

    /**
     * Accumulator: scheduled workers whose scheduler never saw a device's queue (neither of a
     * trainer in its TaskManager nor from the workers' coordinator), so paced them blind.
     */
    public static final String PACED_BLIND = "workersPacedBlind";

    /** Gauge: how many workers of this job in this TaskManager may prepare at once. */
    public static final String ACTIVE_WORKERS = "activeWorkers";

    /**
     * Accumulator: the sources quarantined during the run, each {@code file + '\0' + reason}
     * (repeated by every worker that knows it).
     */
    public static final String QUARANTINED = Quarantine.QUARANTINED;

    /** Accumulator: samples left out during the run because their source was quarantined. */
    public static final String SAMPLES_SKIPPED = Quarantine.SAMPLES_SKIPPED;

    protected final Workload<?> workload;
    private final int devices;
    private final WorkerScheduler.Kind kind;
    private final boolean scheduled;
    private boolean skipBadSamples;
    private int pieceBytes = SampleChunks.MAX_BYTES;
    private long dealtBySample; // 0: in turn; else samples per epoch (see DeviceDealer)

    private transient OperatorEventGateway coordinator; // null: none (a harness)
    private transient MailboxExecutor mailbox;
    private transient WorkerScheduler scheduler;
    private transient WorkerScheduler.Registration registration;
    private transient SampleHandoff.Reservation handoff;
    private transient Receivers batchers;
    private transient SampleChunks chunks;
    private transient LongCounter sentInPieces;
    private transient DeviceDealer dealer;
    private transient ListState<SampleTask> waitingState;
    private transient SampleTask waiting;
    private transient List<SampleTask> recovered;
    private transient PrepTimes prepTimes;
    private transient LongCounter pacedBlind;
    private transient TaskManagerUsage.Share usage;
    private transient Quarantine quarantine;

    /**
     * @param devices how many devices' batchers the samples are dealt to
     * @param scheduled whether the job's {@link WorkerScheduler} paces this worker (else it
     *     prepares whenever it has work, and the OS shares the cores)
     * @param receiver what producers in its TaskManager hand it in place as ({@link
     *     ReceivingOperator}); null: nothing
     */
    PreparingOperator(
            Workload<?> workload,
            int devices,
            WorkerScheduler.Kind kind,
            boolean scheduled,
            String receiver) {
        super(receiver);
        this.workload = workload;
        this.devices = devices;
        this.kind = kind;
        this.scheduled = scheduled;
    }

    /**
     * Quarantines samples that meet bad input during the run ({@code --on-bad-sample skip}) instead
     * of failing the job; see the class comment.
     */
    final void skipBadSamples(boolean skip) {
        this.skipBadSamples = skip;
    }

    /**
     * Sends a sample that travels with its bytes in pieces of at most {@code maxBytes} of its patch
     * when it has more ({@link SampleChunks#MAX_BYTES} unless told; tests, whose samples are small,
     * give less).
     */
    final void sendInPiecesOf(int maxBytes) {
        if (maxBytes < 1) {
            throw new IllegalArgumentException("piece bytes must be >= 1: " + maxBytes);
        }
        this.pieceBytes = maxBytes;
    }

    /**
     * Deals each finished sample to the device its position in the run names, epochs of {@code
     * samplesPerEpoch} samples, instead of in turn ({@link DeviceDealer#bySample}).
     */
    final void dealBySample(long samplesPerEpoch) {
        if (samplesPerEpoch < 1) {
            throw new IllegalArgumentException(
                    "samples per epoch must be >= 1: " + samplesPerEpoch);
        }
        this.dealtBySample = samplesPerEpoch;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        quarantine = Quarantine.of(context);
        waitingState =
                context.getOperatorStateStore()
                        .getListState(
                                new ListStateDescriptor<>("waiting", SampleTypes.SAMPLE_TASK));
        recovered = new ArrayList<>();
        if (context.isRestored()) {
            for (SampleTask task : waitingState.get()) {
                recovered.add(task);
            }
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        var task = getRuntimeContext().getTaskInfo();
        dealer =
                dealtBySample > 0
                        ? DeviceDealer.bySample(devices, dealtBySample)
                        : DeviceDealer.inTurn(devices, task.getIndexOfThisSubtask());
        handoff = SampleHandoff.jvm().reserve(SampleHandoff.PREFETCH_PER_WORKER);
        batchers =
                Receivers.of(getRuntimeContext(), getMetricGroup(), SampleHandoff.BATCHER, devices)
                        .counted(getRuntimeContext());
        chunks = new SampleChunks(pieceBytes);
        sentInPieces = new LongCounter();
        getRuntimeContext().addAccumulator(SampleChunks.SENT_IN_PIECES, sentInPieces);
        CacheMetrics.register(getRuntimeContext(), getMetricGroup(), workload);
        quarantine.open(getRuntimeContext());
        prepTimes = PrepTimes.register(getRuntimeContext(), getMetricGroup());
        usage = TaskManagerUsage.open(getRuntimeContext(), getMetricGroup());
        // The whole task's mail, not only this operator's: the input gate's priority events
        // (unaligned checkpoint barriers) are the task's mail, which an operator's own executor
        // does not run.
        mailbox =
                getContainingTask()
                        .getMailboxExecutorFactory()
                        .createExecutor(TaskMailbox.MIN_PRIORITY);
        if (scheduled) {
            scheduler =
                    WorkerScheduler.of(
                            WorkerScheduler.key(
                                    getRuntimeContext().getJobInfo().getJobId().toString(),
                                    task.getAttemptNumber()),
                            getMetricGroup());
            registration = scheduler.worker(kind);
            getMetricGroup().gauge(ACTIVE_WORKERS, (Gauge<Integer>) scheduler::active);
            pacedBlind = getRuntimeContext().getLongCounter(PACED_BLIND);
        }
        if (coordinator != null) {
            coordinator.sendEventToCoordinator(new WorkerRunning()); // now it may be told
        }
        for (SampleTask waited : recovered) {
            guarded(waited, () -> restart(waited));
        }
        recovered.clear();
    }

    @Override
    public final void processElement(StreamRecord<IN> record) throws Exception {
        IN element = record.getValue();
        guarded(taskOf(element), () -> process(element));
    }

    /** A preparation of one sample. */
    private interface Preparation {
        void run() throws Exception;
    }

    /**
     * Runs {@code preparation} of {@code task} unless its source is quarantined; bad input it meets
     * fails the job, or, when skipping, quarantines the source.
     */
    private void guarded(SampleTask task, Preparation preparation) throws Exception {
        if (quarantine.holds(task)) {
            quarantine.skip();
            return;
        }
        try {
            try {
                preparation.run();
            } catch (InternalError fault) {
                // A fault in a mapped case file surfaces where compiled code next checks for it,
                // possibly after the read (while emitting, say): the whole element is guarded.
                throw workload.changedWhileRead(task.caseIndex(), fault);
            }
        } catch (BadInputException bad) {
            if (!skipBadSamples) {
                throw bad;
            }
            quarantine.add(task, bad);
        }
    }

    @Override
    public void coordinatorGateway(OperatorEventGateway gateway) {
        coordinator = gateway;
    }

    /**
     * The workers' coordinator's view of every device's queue ({@link
     * io.minato.loader.pacing.PacingCoordinator}), for this TaskManager's scheduler.
     */
    @Override
    public void handleOperatorEvent(OperatorEvent event) {
        if (event instanceof JobQueues view && scheduler != null) {
            scheduler.jobQueues(view);
        }
    }

    /** Prepares the element and emits the result. */
    abstract void process(IN element) throws Exception;

    /**
     * Prepares a task taken from a checkpoint (it was waiting then) from its start, without a
     * permit (at most one per worker).
     */
    abstract void restart(SampleTask task) throws Exception;

    abstract SampleTask taskOf(IN element);

    /** The device that the sample of {@code task}, which this worker just finished, goes to. */
    final int nextDevice(SampleTask task) {
        return dealer.next(task);
    }

    /**
     * Emits a finished sample to its device's batcher: through the handoff when that batcher runs
     * in this TaskManager, else with its bytes, in pieces when its patch is larger than a record
     * should be ({@link SampleChunks}).
     */
    final void emit(PreparedSample sample) throws Exception {
        PreparedSample routed = batchers.route(sample);
        if (routed.handOff()) {
            parkInHandoff(routed);
        }
        if (routed.handOff() || !chunks.inPieces(routed)) {
            output.collect(new StreamRecord<>(routed));
            return;
        }
        for (PreparedSample piece : chunks.pieces(routed)) {
            output.collect(new StreamRecord<>(piece));
        }
        sentInPieces.add(1L);
        // The pieces were serialized from the patch as they were emitted (the keyed edge to a
        // batcher is never chained): nothing refers to its arrays now; the next preparation
        // reuses them.
        PatchPool.jvm().give(routed.patch());
    }

    /**
     * Parks the patch of {@code sample} in the handoff, waiting while it is full in slices between
     * which the task's mail runs, for as long as it stays full: that wait is the loader's
     * backpressure, and a checkpoint taken meanwhile keeps the task, which is prepared again after
     * a restore. The sample's serialization then finds its patch parked and waits no more. A wait
     * inside the serializer held the task's thread, and every checkpoint's start with it, for up to
     * {@link SampleHandoff#WAIT_NANOS}: a training process that paused longer than that timed
     * checkpoints out. A wait past it is logged, once per sample; a cancelled task's interrupt ends
     * it.
     */
    private void parkInHandoff(PreparedSample sample) throws Exception {
        SampleHandoff handoff = SampleHandoff.jvm();
        long warnAt = System.nanoTime() + SampleHandoff.WAIT_NANOS;
        boolean warned = false;
        while (!handoff.offerWithin(sample.task(), sample.patch(), ROOM_SLICE_MILLIS)) {
            if (Thread.currentThread().isInterrupted()) {
                // The task is cancelled (a failover, the job's end): its thread must leave.
                throw new InterruptedException("cancelled while waiting for the handoff");
            }
            if (!warned && System.nanoTime() > warnAt) {
                warned = true;
                LOG.info(
                        "{}: the samples handed to this TaskManager's batchers have not been taken"
                                + " for {} s; waiting (the devices' queues are full)",
                        getOperatorName(),
                        TimeUnit.NANOSECONDS.toSeconds(SampleHandoff.WAIT_NANOS));
            }
            waiting = sample.task();
            try {
                while (mailbox.tryYield()) {
                    // each mail in turn: a checkpoint's among them
                }
            } finally {
                waiting = null;
            }
        }
    }

    /**
     * Waits for the scheduler's permit to prepare {@code task} (at once when not scheduled). While
     * it waits, checkpoints may be taken, and keep the task.
     */
    final void acquire(SampleTask task) throws Exception {
        if (scheduler == null) {
            return;
        }
        waiting = task;
        try {
            scheduler.acquire(kind, mailbox::tryYield);
        } finally {
            waiting = null;
        }
    }

    /** Gives the permit back, with the CPU used while holding it. */
    final void release(long cpuNanos) {
        if (scheduler != null) {
            scheduler.release(cpuNanos);
        }
    }

    /** The calling thread's time in reads so far: before a preparation's steps. */
    final PrepTimes.Mark fetchMark() {
        return PrepTimes.mark();
    }

    /** Counts the reads of the steps run since {@code mark} (the report's fetch). */
    final void fetched(PrepTimes.Mark mark) {
        prepTimes.add(mark);
    }

    /** Whether a scheduler paces this worker. */
    final boolean paced() {
        return scheduler != null;
    }

    /** The scheduler's mean active count; NaN when not scheduled. */
    final double meanActiveWorkers() {
        return scheduler == null ? Double.NaN : scheduler.meanActive();
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        waitingState.update(waiting == null ? List.of() : List.of(waiting));
        quarantine.snapshot();
    }

    /** The accumulators this worker registers (written for a detached job at close). */
    String[] accumulatorNames() {
        String[] names =
                Quarantine.with(
                        PrepTimes.with(
                                TaskManagerUsage.with(
                                        Receivers.withSentAsBytes(CacheMetrics.NAMES))));
        String[] all = Arrays.copyOf(names, names.length + 2);
        all[names.length] = PACED_BLIND;
        all[names.length + 1] = SampleChunks.SENT_IN_PIECES;
        return all;
    }

    @Override
    public void close() throws Exception {
        try {
            stopReceiving();
            if (pacedBlind != null && !scheduler.sawQueues()) {
                pacedBlind.add(1L);
            }
            if (usage != null) {
                usage.close(false, meanActiveWorkers());
            }
            AccumulatorFiles.write(getRuntimeContext(), accumulatorNames());
            if (registration != null) {
                registration.close();
            }
            if (handoff != null) {
                handoff.close();
            }
        } finally {
            super.close();
        }
    }
}
