package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.sample.UnfinishedSample;
import io.minato.sample.serde.SampleTypes;
import io.minato.stats.CpuClock;
import io.minato.transform.Preparation;
import io.minato.transform.TransformConfig;
import io.minato.transform.Volume;
import org.apache.flink.api.common.accumulators.DoubleMaximum;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * A fast worker: prepares a sample under a deadline. Done in time, the sample leaves on the main
 * output, dealt to the next device in this worker's turn ({@link DeviceDealer}); past the deadline
 * it leaves at the next step boundary on the {@link #SLOW} side output, unfinished, and the worker
 * takes the next sample at once.
 */
public class AugmentOperator extends ProcessFunction<SampleTask, PreparedSample> {
    private static final long serialVersionUID = 1L;

    /** Samples that passed their deadline, to be finished by the {@link SlowPath}. */
    public static final OutputTag<UnfinishedSample> SLOW =
            new OutputTag<>("slow", SampleTypes.UNFINISHED_SAMPLE);

    /** Accumulator: the largest final deadline over the workers, in ms (for the report). */
    public static final String TIMEOUT_MS = "timeoutMs";

    private final CaseTable cases;
    private final TransformConfig config;
    private final TimeoutPolicy timeoutSetting;
    private final int devices;

    private transient TimeoutPolicy timeout;
    private transient Counter fast;
    private transient Counter slow;
    private transient DoubleMaximum finalTimeoutMs;
    private transient SampleHandoff.Reservation handoff;
    private transient DeviceDealer dealer;

    /**
     * @param devices how many devices' batchers the samples are dealt to
     */
    public AugmentOperator(
            CaseTable cases, TransformConfig config, TimeoutPolicy timeout, int devices) {
        this.cases = cases;
        this.config = config;
        this.timeoutSetting = timeout;
        this.devices = devices;
    }

    @Override
    public void open(OpenContext openContext) {
        timeout = timeoutSetting.copy();
        dealer =
                new DeviceDealer(
                        devices, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        handoff = SampleHandoff.jvm().reserve(SampleHandoff.PREFETCH_PER_WORKER);
        var metrics = getRuntimeContext().getMetricGroup();
        finalTimeoutMs = new DoubleMaximum();
        getRuntimeContext().addAccumulator(TIMEOUT_MS, finalTimeoutMs);
        CacheMetrics.register(getRuntimeContext(), metrics, cases);
        fast = metrics.counter("samplesFast");
        slow = metrics.counter("samplesSlow");
        metrics.gauge(
                "timeoutMs",
                () ->
                        timeout.timeoutNanos() == Long.MAX_VALUE
                                ? -1.0
                                : timeout.timeoutNanos() / 1e6);
    }

    /**
     * A fault in a mapped case file surfaces as an InternalError where compiled code next checks
     * for it, possibly after the read (while emitting, say): the whole element is guarded.
     */
    @Override
    public void processElement(SampleTask task, Context ctx, Collector<PreparedSample> out)
            throws Exception {
        try {
            prepare(task, ctx, out);
        } catch (InternalError fault) {
            throw cases.changedWhileRead(task.caseIndex(), fault);
        }
    }

    private void prepare(SampleTask task, Context ctx, Collector<PreparedSample> out)
            throws Exception {
        long start = System.nanoTime();
        long cpu0 = CpuClock.threadNanos();
        long budget = timeout.timeoutNanos();
        Volume volume = cases.volume(task.caseIndex());
        Preparation p = Preparation.start(task.key());
        while (!p.isDone()) {
            p.advance(volume, config);
            if (!p.isDone() && System.nanoTime() - start > budget) {
                break;
            }
        }
        long cpu = CpuClock.threadNanos() - cpu0;
        if (p.isDone()) {
            timeout.finished(System.nanoTime() - start);
            fast.inc();
            out.collect(new PreparedSample(task, SamplePath.FAST, cpu, p.result(), dealer.next()));
        } else {
            timeout.cutOff();
            slow.inc();
            ctx.output(SLOW, new UnfinishedSample(task, p, cpu));
        }
    }

    @Override
    public void close() {
        if (handoff != null) {
            handoff.close();
        }
        if (timeout != null && timeout.timeoutNanos() != Long.MAX_VALUE) {
            finalTimeoutMs.add(timeout.timeoutNanos() / 1e6);
        }
    }
}
