package io.minato.loader;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.api.common.accumulators.SimpleAccumulator;

/**
 * An accumulator that reads a live counter of an operator (its workers count on their own threads);
 * merged copies hold plain sums, or the largest value seen.
 */
final class LiveAccumulator implements SimpleAccumulator<Long> {
    private static final long serialVersionUID = 1L;
    private transient LongSupplier source;
    private final boolean max;
    private final AtomicLong merged = new AtomicLong();

    private LiveAccumulator(LongSupplier source, boolean max) {
        this.source = source;
        this.max = max;
    }

    /** Summed over subtasks. */
    static LiveAccumulator sum(LongSupplier source) {
        return new LiveAccumulator(source, false);
    }

    /** The largest over subtasks (what every subtask of a JVM reads alike). */
    static LiveAccumulator max(LongSupplier source) {
        return new LiveAccumulator(source, true);
    }

    @Override
    public void add(Long value) {
        if (max) {
            merged.accumulateAndGet(value, Math::max);
        } else {
            merged.addAndGet(value);
        }
    }

    @Override
    public Long getLocalValue() {
        long live = source == null ? 0 : source.getAsLong();
        return max ? Math.max(merged.get(), live) : merged.get() + live;
    }

    @Override
    public void resetLocal() {
        merged.set(0);
        source = null;
    }

    @Override
    public void merge(Accumulator<Long, Long> other) {
        add(other.getLocalValue());
    }

    /** Flink ships accumulators serialized: ship the current count, not the live source. */
    private Object writeReplace() {
        return clone();
    }

    @Override
    public LiveAccumulator clone() {
        LiveAccumulator copy = new LiveAccumulator(null, max);
        copy.merged.set(getLocalValue());
        return copy;
    }
}
