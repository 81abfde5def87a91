package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.stats.CpuClock;
import io.minato.transform.Preparation;
import io.minato.transform.TransformConfig;
import io.minato.transform.Volume;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

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
    public SlowPath(CaseTable cases, TransformConfig config, int devices) {
        this(cases, config, devices, false);
    }

    /**
     * @param devices how many devices' batchers the samples are dealt to
     * @param scheduled whether the job's {@link WorkerScheduler} paces this worker
     */
    public SlowPath(CaseTable cases, TransformConfig config, int devices, boolean scheduled) {
        super(cases, config, devices, WorkerScheduler.Kind.SLOW, scheduled);
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
        finish(sample.task(), sample.preparation(), sample.prepCpuNanos(), true);
    }

    @Override
    void restart(SampleTask task) throws Exception {
        finish(task, Preparation.start(task.key()), 0, false);
    }

    private void finish(SampleTask task, Preparation p, long cpuBefore, boolean paced)
            throws Exception {
        long cpu = cpuBefore;
        Volume volume = cases.volume(task.caseIndex());
        while (!p.isDone()) {
            if (paced) {
                acquire(task);
            }
            long cpu0 = CpuClock.threadNanos();
            try {
                p.advance(volume, config);
            } finally {
                long used = CpuClock.threadNanos() - cpu0;
                cpu += used;
                if (paced) {
                    release(used);
                }
            }
        }
        finished.inc();
        output.collect(
                new StreamRecord<>(
                        new PreparedSample(task, SamplePath.SLOW, cpu, p.result(), nextDevice())));
    }
}
