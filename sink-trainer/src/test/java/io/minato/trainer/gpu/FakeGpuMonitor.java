package io.minato.trainer.gpu;

import java.util.ArrayDeque;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A present GPU monitor that answers with scripted readings, in order, then with the last one
 * forever ({@link #constant}) or with none ({@link #scripted}); counts reads and remembers closing.
 */
public final class FakeGpuMonitor implements GpuMonitor {
    private final ArrayDeque<Sample> script;
    private final boolean repeatLast;
    private final AtomicInteger reads = new AtomicInteger();
    private Sample last;
    private volatile boolean closed;

    private FakeGpuMonitor(List<Sample> script, boolean repeatLast) {
        this.script = new ArrayDeque<>(script);
        this.repeatLast = repeatLast;
    }

    /** Reads {@code sample} every time. */
    public static FakeGpuMonitor constant(Sample sample) {
        return new FakeGpuMonitor(List.of(sample), true);
    }

    /** Reads {@code samples} in order, then nothing, as NVML failing to answer. */
    public static FakeGpuMonitor scripted(Sample... samples) {
        return new FakeGpuMonitor(List.of(samples), false);
    }

    public static Sample sample(int utilizationPercent, long usedBytes, long totalBytes) {
        return new Sample(utilizationPercent, usedBytes, totalBytes);
    }

    @Override
    public Optional<Gpu> gpu() {
        return Optional.of(new Gpu(0, "fake GPU", 8L << 30));
    }

    @Override
    public synchronized Optional<Sample> sample() {
        reads.incrementAndGet();
        if (closed) {
            return Optional.empty();
        }
        if (!script.isEmpty()) {
            last = script.removeFirst();
            return Optional.of(last);
        }
        return repeatLast ? Optional.ofNullable(last) : Optional.empty();
    }

    @Override
    public void close() {
        closed = true;
    }

    public int reads() {
        return reads.get();
    }

    public boolean closed() {
        return closed;
    }
}
