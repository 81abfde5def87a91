package io.minato.loader;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.training.dataset.Sampler;
import ai.djl.translate.Batchifier;
import ai.djl.util.Progress;
import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import io.minato.spi.Shape3;
import io.minato.spi.Workload;
import io.minato.stats.CpuClock;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.flink.metrics.Counter;
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
    private transient SampleHandoff.Reservation handoff;
    private transient Receivers trainers;
    private final int workers;
    private boolean skipBadSamples;

    private transient Feed feed;
    private transient ExecutorService executor;
    private transient Thread iterator;
    private transient BlockingQueue<Object> handover; // Batch, or END, or a Throwable
    private transient long emitted; // batches emitted
    private transient long firstBatch; // batch number of the first batch of this (re)start
    private transient GlobalBatchState state;
    private transient Quarantine quarantine;
    private transient Counter batchesMetric;
    private transient Counter samplesDropped;
    private transient InOrderBatches order;
    private transient PrepTimes prepTimes;
    private transient TaskManagerUsage.Share usage;

    private static final Object END = new Object();

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
        batchesMetric = getMetricGroup().counter("batches");
        samplesDropped = getMetricGroup().counter("samplesDropped");
        CacheMetrics.register(getRuntimeContext(), getMetricGroup(), workload);
        prepTimes = PrepTimes.register(getRuntimeContext(), getMetricGroup());
        usage = TaskManagerUsage.open(getRuntimeContext(), getMetricGroup());
        quarantine.open(getRuntimeContext());
        // DJL numbers the batches of each (re)start from 0.
        order =
                new InOrderBatches(
                        batchSize,
                        0,
                        HeadOfLine.of(
                                WorkerScheduler.inTaskManager(
                                        WorkerScheduler.key(
                                                getRuntimeContext()
                                                        .getJobInfo()
                                                        .getJobId()
                                                        .toString(),
                                                getRuntimeContext()
                                                        .getTaskInfo()
                                                        .getAttemptNumber()),
                                        getMetricGroup())));
        // Batches cross to the trainers as identities: two per device may be parked at once.
        handoff = SampleHandoff.jvm().reserve(2 * batchSize * devices);
        trainers =
                Receivers.of(getRuntimeContext(), getMetricGroup(), SampleHandoff.TRAINER, devices)
                        .counted(getRuntimeContext());
        feed = new Feed(batchSize);
        state.restoredTasks().forEach(feed::add);
        handover = new ArrayBlockingQueue<>(1);
        executor =
                Executors.newFixedThreadPool(
                        workers,
                        r -> {
                            Thread t = new Thread(r, "djl-loader-worker");
                            t.setDaemon(true);
                            return t;
                        });
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
        samplesDropped.inc(feed.remainder().size());
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
        if (usage != null) {
            usage.close(false, Double.NaN);
        }
        AccumulatorFiles.write(
                getRuntimeContext(),
                Quarantine.with(
                        PrepTimes.with(
                                TaskManagerUsage.with(
                                        Receivers.withSentAsBytes(CacheMetrics.NAMES)))));
        if (order != null) {
            order.close();
        }
        if (handoff != null) {
            handoff.close();
        }
        if (iterator != null) {
            iterator.interrupt();
        }
        if (executor != null) {
            executor.shutdownNow();
        }
        super.close();
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
                new StreamRecord<>(GlobalBatchState.toDevice(k, devices, b.samples(), trainers)));
        batchesMetric.inc();
    }

    /** The loader thread: DJL's iteration over the dataset, batches into the handover. */
    private void iterate() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Dataset dataset =
                    new Dataset(
                            feed,
                            workload,
                            prefetch(),
                            order,
                            prepTimes,
                            skipBadSamples ? quarantine : null);
            FeedSampler sampler = new FeedSampler(feed);
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
                        order.handedOut(first / batchSize);
                        handover.put(toBatch(djl, dataset, first));
                    }
                    first += batchSize;
                }
            }
            handover.put(END);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            try {
                handover.put(rootBadInput(t));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
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

    /**
     * Back from DJL's stacked NDArrays to the samples the trainer takes; the stack holds the
     * batch's samples that were not left out, in order.
     */
    private static Batch toBatch(ai.djl.training.dataset.Batch djl, Dataset dataset, long first) {
        int size = djl.getSize();
        if (djl.getData().isEmpty()) {
            for (int i = 0; i < size; i++) {
                dataset.takeLeftOut(first + i);
            }
            return new Batch(0, 0, List.of());
        }
        NDArray images = djl.getData().singletonOrThrow();
        NDArray labels = djl.getLabels().singletonOrThrow();
        Shape s = images.getShape(); // (B, 1, D, H, W)
        Shape3 patch = new Shape3((int) s.get(2), (int) s.get(3), (int) s.get(4));
        int voxels = (int) patch.voxels();
        float[] allImages = images.toFloatArray();
        byte[] allLabels = labels.toByteArray();
        int labelBytes = (int) (allLabels.length / s.get(0));
        List<PreparedSample> samples = new ArrayList<>(size);
        int row = 0;
        for (int i = 0; i < size; i++) {
            long index = first + i;
            if (dataset.takeLeftOut(index)) {
                continue;
            }
            Patch arrays = PatchPool.jvm().take(patch, labelBytes); // all written below
            System.arraycopy(allImages, row * voxels, arrays.image(), 0, voxels);
            System.arraycopy(allLabels, row * labelBytes, arrays.label(), 0, labelBytes);
            row++;
            samples.add(
                    new PreparedSample(
                            dataset.task(index),
                            SamplePath.FAST,
                            dataset.takePrepNanos(index),
                            arrays));
        }
        return new Batch(0, 0, samples);
    }

    /** The tasks received so far, in order; index i is the i-th task of this (re)start. */
    static final class Feed {
        private final int batchSize;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition added = lock.newCondition();
        private final List<SampleTask> tasks = new ArrayList<>();
        private boolean ended;
        private boolean draining; // a checkpoint waits for the batches at hand
        private long sampled; // tasks handed to DJL's sampler, in whole batches

        Feed(int batchSize) {
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
    }

    /** DJL's sampler over the feed: consecutive runs of B tasks, those that have arrived. */
    static final class FeedSampler implements Sampler {
        private final Feed feed;

        FeedSampler(Feed feed) {
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

    /** The samples as a DJL dataset: {@code get} prepares one sample, image and label. */
    static final class Dataset extends RandomAccessDataset {
        private final Feed feed;
        private final Workload<?> workload;
        private final Map<Long, Long> prepNanos = new ConcurrentHashMap<>();
        private final InOrderBatches order;
        private final PrepTimes prepTimes;
        private final Quarantine quarantine; // null: bad input fails the job
        private final Set<Long> leftOut = ConcurrentHashMap.newKeySet();

        /**
         * @param quarantine where samples that meet bad input are quarantined; null to fail on them
         */
        Dataset(
                Feed feed,
                Workload<?> workload,
                int prefetch,
                InOrderBatches order,
                PrepTimes prepTimes,
                Quarantine quarantine) {
            super(new Builder(prefetch).setSampling(1, false));
            this.feed = feed;
            this.workload = workload;
            this.order = order;
            this.prepTimes = prepTimes;
            this.quarantine = quarantine;
        }

        /** Whether sample {@code index} was left out; forgets it. */
        boolean takeLeftOut(long index) {
            return leftOut.remove(index);
        }

        SampleTask task(long index) {
            return feed.get(index);
        }

        long takePrepNanos(long index) {
            Long n = prepNanos.remove(index);
            return n == null ? 0 : n;
        }

        @Override
        public Record get(NDManager manager, long index) {
            SampleTask task = feed.get(index);
            if (quarantine != null && quarantine.holds(task)) {
                quarantine.skip();
                return leaveOut(index);
            }
            long cpu0 = CpuClock.threadNanos();
            PrepTimes.Mark reads = PrepTimes.mark();
            Patch p;
            try {
                p = workload.prepare(task.key(), task.caseIndex());
            } catch (BadInputException e) {
                if (quarantine == null) {
                    throw new IllegalStateException(e.getMessage(), e);
                }
                quarantine.add(task, e);
                return leaveOut(index);
            } finally {
                prepTimes.add(reads);
            }
            prepNanos.put(index, CpuClock.threadNanos() - cpu0);
            order.samplePrepared(index / feed.batchSize);
            Shape shape = new Shape(1, p.shape().d(), p.shape().h(), p.shape().w());
            NDArray image = manager.create(p.image(), shape);
            // The target's bytes as they are, dense or a class index: the trainer reads them back.
            NDArray label =
                    manager.create(
                            ByteBuffer.wrap(p.label()),
                            new Shape(p.label().length),
                            DataType.UINT8);
            PatchPool.jvm().give(p); // copied into the NDArrays
            return new Record(new NDList(image), new NDList(label));
        }

        /** The empty record of a sample left out, which {@link LeavingOut} does not stack. */
        private Record leaveOut(long index) {
            leftOut.add(index);
            order.samplePrepared(index / feed.batchSize); // its batch must not wait for it
            return new Record(new NDList(), new NDList());
        }

        @Override
        protected long availableSize() {
            return Long.MAX_VALUE; // a stream: as many as arrive
        }

        @Override
        public void prepare(Progress progress) {}

        static final class Builder extends RandomAccessDataset.BaseBuilder<Builder> {
            Builder(int prefetch) {
                optPrefetchNumber(prefetch);
                optDataBatchifier(new LeavingOut());
                optLabelBatchifier(new LeavingOut());
            }

            @Override
            protected Builder self() {
                return this;
            }
        }
    }

    /** DJL's stacking batchifier over the records of samples not left out (empty ones). */
    static final class LeavingOut implements Batchifier {
        private static final long serialVersionUID = 1L;

        @Override
        public NDList batchify(NDList[] inputs) {
            NDList[] kept = Arrays.stream(inputs).filter(l -> !l.isEmpty()).toArray(NDList[]::new);
            return kept.length == 0 ? new NDList() : Batchifier.STACK.batchify(kept);
        }

        @Override
        public NDList[] unbatchify(NDList inputs) {
            return Batchifier.STACK.unbatchify(inputs);
        }
    }
}
