package io.minato.loader.baseline;

import io.minato.data.BadInputException;
import io.minato.loader.FailureMail;
import io.minato.loader.PrepTimes;
import io.minato.loader.Quarantine;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Workload;
import io.minato.stats.CpuClock;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The in-order baseline loader, with PyTorch {@code DataLoader} semantics: batch k is the k-th run
 * of B tasks, built whole by worker {@code k % W}, at most {@code prefetchFactor * W} batches in
 * flight, emitted strictly in order to device {@code k % G}, so one slow sample holds back every
 * batch behind it.
 *
 * <p>Run it at parallelism 1 (the batch numbering is global, as in one {@code DataLoader}); its
 * parallelism is the W worker threads. Nothing in flight is checkpointed: the barrier waits until
 * every dispatched batch is emitted, and the state is the partial batch plus the batch counter.
 *
 * <p>Under {@code --on-bad-sample skip} a sample that meets bad input is left out of its batch and
 * its source quarantined for the rest of the run ({@link Quarantine}, operator state like the
 * minato workers'): the batch goes out without it, one sample short (a batch left with none is not
 * emitted; the next keeps its number), as a {@code DataLoader} whose collate drops failed samples.
 */
public class InOrderLoader extends AbstractStreamOperator<Batch>
        implements OneInputStreamOperator<SampleTask, Batch>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    /** DataLoader's default: two batches per worker dispatched ahead. */
    public static final int DEFAULT_PREFETCH_FACTOR = 2;

    private final Workload<?> workload;
    private final int batchSize;
    private final int devices;
    private final int workers;
    private final int prefetchFactor;
    private final boolean skipBadSamples;

    /** One single-thread executor per worker: its queue is DataLoader's per-worker index queue. */
    private transient ExecutorService[] pool;

    private transient ArrayDeque<InFlight> inFlight;
    private transient List<SampleTask> grouping;
    private transient long nextBatch;
    private transient GlobalBatchState state;
    private transient Quarantine quarantine;

    private transient InOrderBaseline baseline;

    /** Written on the operator thread, read by the metric reporter. */
    private transient volatile int outstanding;

    private transient int maxOutstanding;

    private record InFlight(long number, Future<List<PreparedSample>> samples) {}

    /** Package-private so that tests can hold a batch back by overriding {@link #prepareSample}. */
    InOrderLoader(Builder b) {
        this.workload = b.workload;
        this.batchSize = b.batchSize;
        this.devices = b.devices;
        this.workers = b.workers;
        this.prefetchFactor = b.prefetchFactor;
        this.skipBadSamples = b.skipBadSamples;
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        state = new GlobalBatchState(context, "grouping");
        grouping = new ArrayList<>(state.restoredTasks());
        nextBatch = state.restoredNextBatch();
        quarantine = Quarantine.of(context);
    }

    @Override
    public void open() throws Exception {
        super.open();
        GlobalBatchState.requireOneSubtask(
                getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks(),
                "in-order loader",
                "; use more workers instead");
        inFlight = new ArrayDeque<>();
        pool = new ExecutorService[workers];
        for (int w = 0; w < workers; w++) {
            String name = "in-order-loader-worker-" + w;
            pool[w] =
                    Executors.newSingleThreadExecutor(
                            r -> {
                                Thread t = new Thread(r, name);
                                t.setDaemon(true);
                                return t;
                            });
        }
        var metrics = getMetricGroup();
        metrics.gauge("outstanding", () -> outstanding);
        quarantine.open(getRuntimeContext());
        baseline =
                new InOrderBaseline(
                        getRuntimeContext(),
                        metrics,
                        workload,
                        batchSize,
                        devices,
                        nextBatch,
                        FailureMail.to(getContainingTask(), this::surfaceFailure));
    }

    @Override
    public void processElement(StreamRecord<SampleTask> element) throws Exception {
        grouping.add(element.getValue());
        while (grouping.size() >= batchSize) {
            List<SampleTask> tasks = List.copyOf(grouping.subList(0, batchSize));
            grouping.subList(0, batchSize).clear();
            dispatch(tasks);
        }
        // Hand over what is ready at the head without waiting, so a batch does not sit here
        // until the limit forces it out; order is kept because only the head leaves.
        while (!inFlight.isEmpty() && inFlight.peekFirst().samples().isDone()) {
            emitOldest();
        }
    }

    @Override
    public void endInput() throws Exception {
        drain();
        // drop_last=True: the remainder of fewer than B tasks never becomes a batch.
        baseline.samplesDropped.inc(grouping.size());
        grouping.clear();
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        super.prepareSnapshotPreBarrier(checkpointId);
        drain();
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        if (!inFlight.isEmpty()) {
            throw new IllegalStateException(
                    "snapshot with " + inFlight.size() + " batches in flight; no barrier drain");
        }
        state.update(grouping, nextBatch);
        quarantine.snapshot();
    }

    @Override
    public void close() throws Exception {
        if (baseline != null) {
            baseline.close(getRuntimeContext());
        }
        if (pool != null) {
            for (ExecutorService worker : pool) {
                worker.shutdownNow();
            }
        }
        super.close();
    }

    /** Waits for room (the backpressure), then queues batch k on worker k % W. */
    private void dispatch(List<SampleTask> tasks) throws Exception {
        while (inFlight.size() >= prefetchFactor * workers) {
            emitOldest();
        }
        long k = nextBatch++;
        Future<List<PreparedSample>> samples =
                pool[(int) (k % workers)].submit(
                        () -> {
                            try {
                                return prepare(k, tasks);
                            } catch (Exception | Error e) {
                                baseline.failures.failed(e);
                                throw e;
                            }
                        });
        inFlight.addLast(new InFlight(k, samples));
        outstanding = inFlight.size();
        maxOutstanding = Math.max(maxOutstanding, outstanding);
    }

    private void drain() throws Exception {
        while (!inFlight.isEmpty()) {
            emitOldest();
        }
    }

    /** Blocks on the oldest batch, however late, and emits it: the head-of-line effect. */
    private void emitOldest() throws Exception {
        InFlight head = inFlight.peekFirst();
        List<PreparedSample> samples;
        try {
            samples = head.samples().get();
        } catch (ExecutionException e) {
            throw rethrown(e);
        }
        inFlight.removeFirst();
        outstanding = inFlight.size();
        long k = head.number();
        long heldBackNanos = baseline.order.handedOut(k);
        if (samples.isEmpty()) {
            return; // every sample of it was left out
        }
        output.collect(
                new StreamRecord<>(
                        GlobalBatchState.toDevice(
                                k, devices, samples, heldBackNanos, baseline.trainers)));
        baseline.batches.inc();
    }

    /**
     * A worker's failure, on the operator thread so that the task fails instead of waiting: the
     * batches ready at the head go out in order first, as they would have; then the failure, even
     * if a batch before it is still being prepared.
     */
    private void surfaceFailure() throws Exception {
        while (!inFlight.isEmpty() && inFlight.peekFirst().samples().isDone()) {
            emitOldest();
        }
        for (InFlight f : inFlight) {
            if (f.samples().isDone()) {
                try {
                    f.samples().get();
                } catch (ExecutionException e) {
                    throw rethrown(e);
                }
            }
        }
    }

    /** A worker's failure to throw here, every batch in flight cancelled. */
    private Exception rethrown(ExecutionException e) {
        for (InFlight f : inFlight) {
            f.samples().cancel(true);
        }
        Throwable cause = e.getCause();
        if (cause instanceof Exception ex) {
            return ex;
        }
        if (cause instanceof Error err) {
            throw err;
        }
        return e;
    }

    /**
     * A worker's job: the B samples of batch {@code k}, one after the other, less those left out
     * under skip.
     */
    private List<PreparedSample> prepare(long k, List<SampleTask> tasks)
            throws BadInputException, InterruptedException {
        List<PreparedSample> out = new ArrayList<>(tasks.size());
        for (SampleTask task : tasks) {
            if (Thread.interrupted()) {
                throw new InterruptedException("in-order loader closed");
            }
            PreparedSample sample = prepareOrSkip(task);
            if (sample != null) {
                out.add(sample);
            }
            // A sample left out is done too: its batch must not wait for it.
            baseline.order.samplePrepared(k);
        }
        return out;
    }

    /**
     * The sample, or null when it is left out: its source is quarantined, or (under skip) it meets
     * bad input now and quarantines its source.
     */
    private PreparedSample prepareOrSkip(SampleTask task) throws BadInputException {
        if (quarantine.holds(task)) {
            quarantine.skip();
            return null;
        }
        PrepTimes.Mark mark = PrepTimes.mark();
        try {
            return prepareSample(task);
        } catch (BadInputException bad) {
            if (!skipBadSamples) {
                throw bad;
            }
            quarantine.add(task, bad);
            return null;
        } finally {
            baseline.prepTimes.add(mark);
        }
    }

    /** One sample, the whole chain on the calling worker; no slow path in this loader. */
    PreparedSample prepareSample(SampleTask task) throws BadInputException {
        long cpu0 = CpuClock.threadNanos();
        Patch patch = workload.prepare(task.key(), task.caseIndex());
        return new PreparedSample(task, SamplePath.FAST, CpuClock.threadNanos() - cpu0, patch);
    }

    /** Whether a prepared batch waits behind an unfinished head now (a hold). */
    boolean holdingBack() {
        return baseline.order.holding();
    }

    /** Batches dispatched and not yet emitted. */
    int outstanding() {
        return outstanding;
    }

    /** The most batches ever outstanding at once, for tests of the prefetch limit. */
    int maxOutstanding() {
        return maxOutstanding;
    }

    /** Tasks of the final partial batch that endInput dropped. */
    long samplesDropped() {
        return baseline.samplesDropped.getCount();
    }

    /** Batches already prepared but held behind an unfinished head; operator thread only. */
    int readyBehindHead() {
        if (inFlight.isEmpty() || inFlight.peekFirst().samples().isDone()) {
            return 0;
        }
        int ready = 0;
        for (InFlight f : inFlight) {
            if (f.samples().isDone()) {
                ready++;
            }
        }
        return ready;
    }

    /** Builds an {@link InOrderLoader}: {@code set*} required, {@code opt*} optional. */
    public static final class Builder {
        private Workload<?> workload;
        private int batchSize;
        private int devices;
        private int workers;
        private int prefetchFactor = DEFAULT_PREFETCH_FACTOR;
        private boolean skipBadSamples;

        private Builder() {}

        /** The samples and how each is prepared. */
        public Builder setWorkload(Workload<?> workload) {
            this.workload = Objects.requireNonNull(workload, "workload");
            return this;
        }

        /** B, the samples per batch. */
        public Builder setBatchSize(int batchSize) {
            this.batchSize = positive("batch size", batchSize);
            return this;
        }

        /** G, the devices batches go to round robin. */
        public Builder setDevices(int devices) {
            this.devices = positive("devices", devices);
            return this;
        }

        /** W, the worker threads, each building whole batches. */
        public Builder setWorkers(int workers) {
            this.workers = positive("workers", workers);
            return this;
        }

        /** Batches dispatched ahead per worker; {@value #DEFAULT_PREFETCH_FACTOR} by default. */
        public Builder optPrefetchFactor(int prefetchFactor) {
            this.prefetchFactor = positive("prefetch factor", prefetchFactor);
            return this;
        }

        /**
         * Whether a sample that meets bad input during the run is left out and its source
         * quarantined ({@code --on-bad-sample skip}) instead of failing the job; off by default.
         */
        public Builder optSkipBadSamples(boolean skip) {
            this.skipBadSamples = skip;
            return this;
        }

        public InOrderLoader build() {
            if (workload == null) {
                throw new IllegalStateException("the in-order loader needs a workload");
            }
            if (batchSize == 0 || devices == 0 || workers == 0) {
                throw new IllegalStateException(
                        "the in-order loader needs a batch size, devices and workers");
            }
            return new InOrderLoader(this);
        }

        private static int positive(String name, int value) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be >= 1: " + value);
            }
            return value;
        }
    }
}
