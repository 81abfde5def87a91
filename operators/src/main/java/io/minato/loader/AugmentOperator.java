package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.sample.serde.SampleTypes;
import io.minato.spi.Steps;
import io.minato.spi.Workload;
import io.minato.stats.CpuClock;
import java.util.Arrays;
import org.apache.flink.api.common.accumulators.AverageAccumulator;
import org.apache.flink.api.common.accumulators.DoubleMaximum;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

/**
 * A fast worker: prepares a sample under a deadline. Done in time, the sample leaves on the main
 * output, dealt to the next device in this worker's turn ({@link DeviceDealer}); past the deadline
 * it leaves at the next step boundary on the {@link #SLOW} side output, unfinished, and the worker
 * takes the next sample at once. Under the {@link WorkerScheduler} it holds a permit for the whole
 * attempt.
 */
public class AugmentOperator extends PreparingOperator<SampleTask> {
    private static final long serialVersionUID = 1L;

    /** Samples that passed their deadline, to be finished by the {@link SlowPath}. */
    public static final OutputTag<UnfinishedSample> SLOW =
            new OutputTag<>("slow", SampleTypes.UNFINISHED_SAMPLE);

    /** Accumulator: the largest final deadline over the workers, in ms (for the report). */
    public static final String TIMEOUT_MS = "timeoutMs";

    /**
     * Accumulator: the scheduler's mean active workers, averaged over the fast workers (absent when
     * no scheduler paced them).
     */
    public static final String ACTIVE_WORKERS_MEAN = "activeWorkersMean";

    private final TimeoutPolicy timeoutSetting;
    private final int slowWorkers;

    private transient TimeoutPolicy timeout;
    private transient Counter fast;
    private transient Counter slow;
    private transient DoubleMaximum finalTimeoutMs;
    private transient AverageAccumulator activeMean;
    private transient Receivers slowPaths;
    private transient int nextSlowWorker;

    /** A fast worker that prepares whenever it has work, beside one slow worker. */
    public AugmentOperator(Workload<?> workload, TimeoutPolicy timeout, int devices) {
        this(workload, timeout, devices, 1, false);
    }

    /**
     * @param devices how many devices' batchers the samples are dealt to
     * @param slowWorkers the {@link SlowPath}'s parallelism; it takes the {@link #SLOW} output
     *     through a {@link SlowWorkerPartitioner}, each sample to the slow worker this one chose
     * @param scheduled whether the job's {@link WorkerScheduler} paces this worker
     */
    public AugmentOperator(
            Workload<?> workload,
            TimeoutPolicy timeout,
            int devices,
            int slowWorkers,
            boolean scheduled) {
        super(workload, devices, WorkerScheduler.Kind.FAST, scheduled, null);
        if (slowWorkers < 1) {
            throw new IllegalArgumentException("slow workers must be >= 1: " + slowWorkers);
        }
        this.timeoutSetting = timeout;
        this.slowWorkers = slowWorkers;
    }

    /**
     * This worker, quarantining samples that meet bad input instead of failing the job ({@code
     * --on-bad-sample skip}; see {@link PreparingOperator}).
     */
    public AugmentOperator skippingBadSamples(boolean skip) {
        skipBadSamples(skip);
        return this;
    }

    /**
     * This worker, dealing each sample to the device its position in the run names ({@code epoch *
     * samplesPerEpoch + index} mod devices) rather than in turn: for devices served to processes
     * outside the job. 0: in turn, as by default.
     */
    public AugmentOperator dealingBySample(long samplesPerEpoch) {
        if (samplesPerEpoch != 0) {
            dealBySample(samplesPerEpoch);
        }
        return this;
    }

    /**
     * This worker, sending a sample that crosses to another TaskManager in pieces of at most {@code
     * maxBytes} of its patch ({@link SampleChunks#MAX_BYTES} unless told; tests, whose samples are
     * small, give less).
     */
    public AugmentOperator sendingPiecesOf(int maxBytes) {
        sendInPiecesOf(maxBytes);
        return this;
    }

    @Override
    public void open() throws Exception {
        timeout = timeoutSetting.copy();
        var metrics = getMetricGroup();
        finalTimeoutMs = new DoubleMaximum();
        getRuntimeContext().addAccumulator(TIMEOUT_MS, finalTimeoutMs);
        fast = metrics.counter("samplesFast");
        slow = metrics.counter("samplesSlow");
        metrics.gauge(
                "timeoutMs",
                () ->
                        timeout.timeoutNanos() == Long.MAX_VALUE
                                ? -1.0
                                : timeout.timeoutNanos() / 1e6);
        super.open();
        var task = getRuntimeContext().getTaskInfo();
        slowPaths =
                Receivers.of(
                        getRuntimeContext(),
                        getMetricGroup(),
                        SampleHandoff.SLOW_PATH,
                        slowWorkers);
        nextSlowWorker = task.getIndexOfThisSubtask() % slowWorkers;
        if (paced()) {
            activeMean = new AverageAccumulator();
            getRuntimeContext().addAccumulator(ACTIVE_WORKERS_MEAN, activeMean);
        }
    }

    @Override
    SampleTask taskOf(SampleTask element) {
        return element;
    }

    @Override
    void process(SampleTask task) throws Exception {
        acquire(task);
        attempt(task, true);
    }

    @Override
    void restart(SampleTask task) throws Exception {
        attempt(task, false);
    }

    private void attempt(SampleTask task, boolean paced) throws Exception {
        attempt(workload, task, paced);
    }

    private <S> void attempt(Workload<S> workload, SampleTask task, boolean paced)
            throws Exception {
        long start = System.nanoTime();
        long cpu0 = CpuClock.threadNanos();
        PrepTimes.Mark reads = fetchMark();
        long budget = timeout.timeoutNanos();
        Steps<S> p = workload.start(task.key());
        long cpu;
        try {
            S source = workload.open(task.caseIndex());
            while (!p.isDone()) {
                p.advance(source);
                if (!p.isDone() && System.nanoTime() - start > budget) {
                    break;
                }
            }
            workload.checkUnchanged(task.caseIndex());
        } finally {
            cpu = CpuClock.threadNanos() - cpu0;
            fetched(reads);
            if (paced) {
                release(cpu);
            }
        }
        if (p.isDone()) {
            timeout.finished(System.nanoTime() - start);
            fast.inc();
            emit(
                    new PreparedSample(
                            task,
                            SamplePath.FAST,
                            cpu + p.outsideCpuNanos(),
                            p.result(),
                            nextDevice(task)));
        } else {
            timeout.cutOff();
            slow.inc();
            int worker = slowWorker();
            UnfinishedSample unfinished = new UnfinishedSample(task, p, cpu, worker);
            // In place for a slow worker in this TaskManager; as the state's bytes otherwise.
            output.collect(
                    SLOW,
                    new StreamRecord<>(
                            slowPaths.here(worker) ? unfinished : unfinished.detached()));
        }
    }

    /**
     * The slow worker for the next sample cut off here: the slow workers in this TaskManager in
     * turn, starting from this worker's own index, so that the fast workers spread their stragglers
     * over them; every slow worker in turn when none runs here.
     */
    private int slowWorker() {
        int first = nextSlowWorker;
        int worker = first;
        for (int i = 0; i < slowWorkers; i++) {
            int candidate = (first + i) % slowWorkers;
            if (slowPaths.here(candidate)) {
                worker = candidate;
                break;
            }
        }
        nextSlowWorker = (worker + 1) % slowWorkers;
        return worker;
    }

    @Override
    String[] accumulatorNames() {
        String[] names = super.accumulatorNames();
        String[] mine = Arrays.copyOf(names, names.length + 2);
        mine[names.length] = TIMEOUT_MS;
        mine[names.length + 1] = ACTIVE_WORKERS_MEAN;
        return mine;
    }

    @Override
    public void close() throws Exception {
        try {
            if (timeout != null && timeout.timeoutNanos() != Long.MAX_VALUE) {
                finalTimeoutMs.add(timeout.timeoutNanos() / 1e6);
            }
            if (activeMean != null) {
                activeMean.add(meanActiveWorkers());
            }
        } finally {
            super.close();
        }
    }
}
