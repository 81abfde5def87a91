package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Steps;
import io.minato.spi.Workload;
import io.minato.stats.CpuClock;
import java.io.IOException;
import org.apache.flink.metrics.Counter;

/**
 * Finishes samples that passed their deadline on a fast worker, from the step they reached: no step
 * is redone, and the result is the one the fast path would have produced. Finished samples are
 * dealt to the devices in turn, as the fast workers deal theirs ({@link DeviceDealer}). Under the
 * {@link WorkerScheduler} it takes a permit for each step, so fast work can go first between two
 * steps of a slow sample when the devices run short.
 */
public class SlowPath extends PreparingOperator<UnfinishedSample> {
    private static final long serialVersionUID = 1L;

    private transient Counter finished;

    /** A slow worker that prepares whenever it has work. */
    public SlowPath(Workload<?> workload, int devices) {
        this(workload, devices, false);
    }

    /**
     * @param devices how many devices' batchers the samples are dealt to
     * @param scheduled whether the job's {@link WorkerScheduler} paces this worker
     */
    public SlowPath(Workload<?> workload, int devices, boolean scheduled) {
        super(workload, devices, WorkerScheduler.Kind.SLOW, scheduled, SampleHandoff.SLOW_PATH);
    }

    /**
     * This worker, quarantining samples that meet bad input instead of failing the job ({@code
     * --on-bad-sample skip}; see {@link PreparingOperator}).
     */
    public SlowPath skippingBadSamples(boolean skip) {
        skipBadSamples(skip);
        return this;
    }

    /**
     * This worker, dealing each sample to the device its position in the run names ({@code epoch *
     * samplesPerEpoch + index} mod devices) rather than in turn: for devices served to processes
     * outside the job. 0: in turn, as by default.
     */
    public SlowPath dealingBySample(long samplesPerEpoch) {
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
    public SlowPath sendingPiecesOf(int maxBytes) {
        sendInPiecesOf(maxBytes);
        return this;
    }

    @Override
    public void open() throws Exception {
        finished = getMetricGroup().counter("samplesFinished");
        super.open();
    }

    @Override
    SampleTask taskOf(UnfinishedSample element) {
        return element.task();
    }

    @Override
    void process(UnfinishedSample sample) throws Exception {
        resume(workload, sample);
    }

    private <S> void resume(Workload<S> workload, UnfinishedSample sample) throws Exception {
        finish(workload, sample.task(), resumed(workload, sample), sample.prepCpuNanos(), true);
    }

    /**
     * Where the sample resumes: the preparation handed over in this JVM, its state read back, or,
     * when the state was lost on the way, the start (with the same result).
     */
    @SuppressWarnings("unchecked") // the job's one workload made both the steps and this operator
    private static <S> Steps<S> resumed(Workload<S> workload, UnfinishedSample sample)
            throws IOException {
        if (sample.steps() != null) {
            return (Steps<S>) sample.steps();
        }
        if (sample.state() != null) {
            return workload.read(sample.state());
        }
        return workload.start(sample.task().key());
    }

    @Override
    void restart(SampleTask task) throws Exception {
        restart(workload, task);
    }

    private <S> void restart(Workload<S> workload, SampleTask task) throws Exception {
        finish(workload, task, workload.start(task.key()), 0, false);
    }

    private <S> void finish(
            Workload<S> workload, SampleTask task, Steps<S> p, long cpuBefore, boolean paced)
            throws Exception {
        long cpu = cpuBefore;
        S source = workload.open(task.caseIndex());
        while (!p.isDone()) {
            if (paced) {
                acquire(task);
            }
            long cpu0 = CpuClock.threadNanos();
            PrepTimes.Mark reads = fetchMark();
            try {
                p.advance(source);
            } finally {
                long used = CpuClock.threadNanos() - cpu0;
                cpu += used;
                fetched(reads);
                if (paced) {
                    release(used);
                }
            }
        }
        workload.checkUnchanged(task.caseIndex());
        finished.inc();
        emit(
                new PreparedSample(
                        task,
                        SamplePath.SLOW,
                        cpu + p.outsideCpuNanos(),
                        p.result(),
                        nextDevice(task)));
    }
}
