package io.minato.loader;

import io.minato.stats.FetchClock;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;

/**
 * The time a loader's workers spent reading samples' files ({@link FetchClock}: the report's
 * fetch), summed over its threads, as metrics and accumulators. The report sets it against the
 * preparation's CPU time: what is left is transforming.
 */
public final class PrepTimes {
    /** Wall-clock nanoseconds in reads. */
    public static final String FETCH_NANOS = "fetchNanos";

    /** CPU nanoseconds in reads. */
    public static final String FETCH_CPU_NANOS = "fetchCpuNanos";

    private final LongAdder fetchWall = new LongAdder();
    private final LongAdder fetchCpu = new LongAdder();

    /** The calling thread's read totals before a preparation. */
    public record Mark(long wall, long cpu) {}

    private PrepTimes() {}

    /** Registers the counters on an operator's metric group and accumulators. */
    public static PrepTimes register(RuntimeContext context, MetricGroup metrics) {
        PrepTimes t = new PrepTimes();
        metrics.gauge(FETCH_NANOS, t.fetchWall::sum);
        context.addAccumulator(FETCH_NANOS, LiveAccumulator.sum(t.fetchWall::sum));
        context.addAccumulator(FETCH_CPU_NANOS, LiveAccumulator.sum(t.fetchCpu::sum));
        return t;
    }

    public static Mark mark() {
        return new Mark(FetchClock.wallNanos(), FetchClock.cpuNanos());
    }

    /** Adds what the calling thread read since {@code mark}. */
    public void add(Mark mark) {
        fetchWall.add(FetchClock.wallNanos() - mark.wall());
        fetchCpu.add(FetchClock.cpuNanos() - mark.cpu());
    }

    /** {@code names} and these accumulators' (for a detached job's accumulator files). */
    public static String[] with(String... names) {
        String[] all = Arrays.copyOf(names, names.length + 2);
        all[names.length] = FETCH_NANOS;
        all[names.length + 1] = FETCH_CPU_NANOS;
        return all;
    }
}
