package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.UnfinishedSample;
import io.minato.stats.CpuClock;
import io.minato.transform.Preparation;
import io.minato.transform.TransformConfig;
import io.minato.transform.Volume;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Finishes samples that passed their deadline on a fast worker, from the step they reached: no step
 * is redone, and the result is the one the fast path would have produced. Finished samples are
 * dealt to the devices in turn, as the fast workers deal theirs ({@link DeviceDealer}).
 */
public class SlowPath extends ProcessFunction<UnfinishedSample, PreparedSample> {
    private static final long serialVersionUID = 1L;

    private final CaseTable cases;
    private final TransformConfig config;
    private final int devices;
    private transient Counter finished;
    private transient SampleHandoff.Reservation handoff;
    private transient DeviceDealer dealer;

    /**
     * @param devices how many devices' batchers the samples are dealt to
     */
    public SlowPath(CaseTable cases, TransformConfig config, int devices) {
        this.cases = cases;
        this.config = config;
        this.devices = devices;
    }

    @Override
    public void open(OpenContext openContext) {
        finished = getRuntimeContext().getMetricGroup().counter("samplesFinished");
        dealer =
                new DeviceDealer(
                        devices, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        handoff = SampleHandoff.jvm().reserve(SampleHandoff.PREFETCH_PER_WORKER);
        CacheMetrics.register(getRuntimeContext(), getRuntimeContext().getMetricGroup(), cases);
    }

    @Override
    public void close() {
        if (handoff != null) {
            handoff.close();
        }
    }

    /** Guarded whole, as in {@link AugmentOperator#processElement}. */
    @Override
    public void processElement(UnfinishedSample sample, Context ctx, Collector<PreparedSample> out)
            throws Exception {
        try {
            finish(sample, out);
        } catch (InternalError fault) {
            throw cases.changedWhileRead(sample.task().caseIndex(), fault);
        }
    }

    private void finish(UnfinishedSample sample, Collector<PreparedSample> out) throws Exception {
        long cpu0 = CpuClock.threadNanos();
        Volume volume = cases.volume(sample.task().caseIndex());
        Preparation p = sample.preparation();
        while (!p.isDone()) {
            p.advance(volume, config);
        }
        long cpu = sample.prepCpuNanos() + CpuClock.threadNanos() - cpu0;
        finished.inc();
        out.collect(
                new PreparedSample(sample.task(), SamplePath.SLOW, cpu, p.result(), dealer.next()));
    }
}
