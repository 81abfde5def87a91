package io.minato.loader.baseline;

import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.RandomAccessDataset;
import io.minato.data.BadInputException;
import io.minato.loader.FailureMail;
import io.minato.loader.Quarantine;
import io.minato.loader.Threads;
import io.minato.sample.Batch;
import io.minato.sample.SampleTask;
import io.minato.spi.Workload;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The second baseline: DJL's own dataset loader. The samples are a DJL {@link RandomAccessDataset}
 * whose {@code get} prepares one sample into NDArrays; DJL's {@code DataIterable} iterates it with
 * an executor of W threads, each batch fetched whole by one thread, {@code prefetch} batches ahead,
 * stacked by DJL's batchifier and handed over strictly in order, so one slow sample holds back its
 * batch and every batch behind it. Batch k goes to device {@code k % G}, as in the in-order loader.
 *
 * <p>The task stream feeds DJL's sampler as it arrives. Run at parallelism 1. At a checkpoint the
 * barrier waits until every full batch received so far is emitted; the state is the tasks of the
 * partial batch and the batch counter. The final remainder of fewer than B tasks is dropped.
 *
 * <p>Under {@code --on-bad-sample skip} a sample that meets bad input is left out of its batch and
 * its source quarantined for the rest of the run ({@link Quarantine}, operator state like the
 * minato workers'): DJL stacks the batch's other samples (a batch left with none is not emitted;
 * the next keeps its number).
 */
public class DjlLoader extends AbstractStreamOperator<Batch>
        implements OneInputStreamOperator<SampleTask, Batch>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    /** Batches in flight per worker thread: the in-order loader's budget, for a fair comparison. */
    public static final int PREFETCH_PER_WORKER = 2;

    private final Workload<?> workload;
    private final int batchSize;
    private final int devices;
    private final int workers;
    private boolean skipBadSamples;

    private transient DjlFeed feed;
    private transient Thread iterator;
    private transient volatile Throwable failure; // the iterator's, once it failed
    private transient BlockingQueue<Object> handover; // Batch, or END, or a Throwable
    private transient long emitted; // batches emitted
    private transient long firstBatch; // batch number of the first batch of this (re)start
    private transient GlobalBatchState state;
    private transient Quarantine quarantine;
    private transient InOrderBaseline baseline;

    private static final Object END = new Object();

    /** How long {@link #close} waits for the iterator to stop DJL's workers. */
    private static final long CLOSE_WAIT_MILLIS = 10_000;

    public DjlLoader(Workload<?> workload, int batchSize, int devices, int workers) {
        this.workload = Objects.requireNonNull(workload, "workload");
        if (batchSize < 1 || devices < 1 || workers < 1) {
            throw new IllegalArgumentException(
                    "batch size, devices and workers must be >= 1: "
                            + batchSize
                            + ", "
                            + devices
                            + ", "
                            + workers);
        }
        this.batchSize = batchSize;
        this.devices = devices;
        this.workers = workers;
    }

    /**
     * This loader, leaving out a sample that meets bad input during the run and quarantining its
     * source ({@code --on-bad-sample skip}) instead of failing the job.
     */
    public DjlLoader skippingBadSamples(boolean skip) {
        this.skipBadSamples = skip;
        return this;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        state = new GlobalBatchState(context, "pending");
        firstBatch = state.restoredNextBatch();
        quarantine = Quarantine.of(context);
    }

    @Override
    public void open() throws Exception {
        super.open();
        GlobalBatchState.requireOneSubtask(
                getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks(), "DJL loader", "");
        quarantine.open(getRuntimeContext());
        // DJL numbers the batches of each (re)start from 0.
        baseline =
                new InOrderBaseline(
                        getRuntimeContext(),
                        getMetricGroup(),
                        workload,
                        batchSize,
                        devices,
                        0,
                        FailureMail.to(getContainingTask(), this::surfaceFailure));
        feed = new DjlFeed(batchSize);
        state.restoredTasks().forEach(feed::add);
        handover = new ArrayBlockingQueue<>(1);
        iterator = new Thread(this::iterate, "djl-loader-iterator");
        iterator.setDaemon(true);
        iterator.start();
    }

    @Override
    public void processElement(StreamRecord<SampleTask> element) throws Exception {
        feed.add(element.getValue());
        // Hand over what is ready without waiting; order is DJL's.
        Object ready;
        while ((ready = handover.poll()) != null) {
            emit(ready);
        }
        // Backpressure, as DataLoader's full index queues: while DJL's prefetch's worth of whole
        // batches waits unsampled, take batches from DJL instead of more tasks.
        while (feed.unsampled() >= (long) prefetch() * batchSize) {
            ready = handover.poll(1, TimeUnit.SECONDS);
            if (ready != null) {
                emit(ready);
            }
        }
    }

    @Override
    public void endInput() throws Exception {
        feed.end();
        drainUntil(Long.MAX_VALUE);
        baseline.samplesDropped.inc(feed.remainder().size());
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        super.prepareSnapshotPreBarrier(checkpointId);
        drainUntil(feed.fullBatches());
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        state.update(feed.remainder(), firstBatch + emitted);
        quarantine.snapshot();
    }

    @Override
    public void close() throws Exception {
        try {
            if (baseline != null) {
                baseline.close(getRuntimeContext());
            }
            if (iterator != null) {
                // It stops DJL's workers and waits for them (see iterate): the task ends once no
                // thread of it runs native code on its arrays, unless a fetch outlasts the wait.
                iterator.interrupt();
                Threads.awaitEnd(iterator, CLOSE_WAIT_MILLIS);
            }
        } finally {
            super.close();
        }
    }

    /** Emits batches until {@code batches} have been emitted since the start, or the end. */
    private void drainUntil(long batches) throws Exception {
        // DJL starts an iteration on fewer batches than its prefetch while this waits for them.
        feed.draining(true);
        try {
            while (emitted < batches) {
                Object next = handover.poll(1, TimeUnit.SECONDS);
                if (next == END) {
                    return;
                }
                if (next != null) {
                    emit(next);
                }
            }
        } finally {
            feed.draining(false);
        }
    }

    /** Batches DJL keeps in flight: its prefetch, per worker thread. */
    private int prefetch() {
        return PREFETCH_PER_WORKER * workers;
    }

    private void emit(Object ready) throws Exception {
        if (ready == END) {
            return;
        }
        if (ready instanceof Throwable t) {
            if (t instanceof Exception e) {
                throw e;
            }
            throw new IllegalStateException("DJL loader failed: " + t, t);
        }
        long k = firstBatch + emitted++;
        Batch b = (Batch) ready;
        if (b.samples().isEmpty()) {
            return; // every sample of it was left out
        }
        output.collect(
                new StreamRecord<>(
                        GlobalBatchState.toDevice(
                                k, devices, b.samples(), b.heldBackNanos(), baseline.trainers)));
        baseline.batches.inc();
    }

    /** Whether a prepared batch waits behind an unfinished head now (a hold); for tests. */
    boolean holdingBack() {
        return baseline.order.holding();
    }

    /** The loader thread: DJL's iteration over the dataset, batches into the handover. */
    private void iterate() {
        ExecutorService executor =
                Executors.newFixedThreadPool(
                        workers,
                        r -> {
                            Thread t = new Thread(r, "djl-loader-worker");
                            t.setDaemon(true);
                            return t;
                        });
        NDManager manager = NDManager.newBaseManager();
        try {
            DjlDataset dataset =
                    new DjlDataset(
                            feed,
                            workload,
                            prefetch(),
                            baseline.order,
                            baseline.prepTimes,
                            skipBadSamples ? quarantine : null);
            DjlFeed.Sampling sampler = new DjlFeed.Sampling(feed);
            long first = 0; // DJL's batches are consecutive runs of B tasks, in order
            // DJL iterates a dataset of known size: its sampler must not block. So each
            // iteration covers the tasks at hand, and a new one starts when more have come. DJL
            // keeps in flight what it could sample as an iteration began (its constructor
            // prefetches, then one batch per batch taken): an iteration waits for a prefetch's
            // worth of batches, or it would prepare one or two at a time while workers idle.
            while (feed.awaitBatches(prefetch())) {
                for (ai.djl.training.dataset.Batch djl :
                        dataset.getData(manager, sampler, executor)) {
                    try (djl) {
                        long heldBackNanos = baseline.order.handedOut(first / batchSize);
                        handover.put(dataset.toBatch(djl, first, heldBackNanos));
                    }
                    first += batchSize;
                }
            }
            handover.put(END);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            failure = rootBadInput(t);
            baseline.failures.failed(failure);
            try {
                handover.put(failure);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        } finally {
            // DJL's workers stack the arrays of this manager's batches in native code. An
            // iteration that failed (one batch's bad sample) or was interrupted leaves the
            // others' fetches running: the manager is freed only once none runs, or libtorch
            // reads freed memory and the whole JVM goes down with it.
            Threads.stopAndAwait(executor);
            manager.close();
        }
    }

    /**
     * The iterator's failure, on the operator thread: the batches handed over go out first, as they
     * would have, then the failure (which may still wait for room in the handover).
     */
    private void surfaceFailure() throws Exception {
        Object ready;
        while ((ready = handover.poll()) != null) {
            emit(ready);
        }
        if (failure != null) {
            emit(failure);
        }
    }

    /** DJL wraps a sample's failure twice; bad input surfaces as itself, in one line. */
    private static Throwable rootBadInput(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof BadInputException) {
                return c;
            }
        }
        return t;
    }
}
