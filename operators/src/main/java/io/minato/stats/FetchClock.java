package io.minato.stats;

/**
 * Time the calling thread spent reading samples' files: what the report calls fetch, beside
 * transforming. A workload wraps its reads in {@link #read()}; the loaders read the totals before
 * and after each preparation. Wall time (a read from a slow disk waits) and CPU time (so that the
 * rest of the preparation's CPU is its transforms) are kept apart.
 */
public final class FetchClock {
    private static final ThreadLocal<long[]> SPENT = ThreadLocal.withInitial(() -> new long[2]);

    private FetchClock() {}

    /** A read under way; closing it adds its time to the thread's. */
    public static final class Read implements AutoCloseable {
        private final long wall0 = System.nanoTime();
        private final long cpu0 = CpuClock.threadNanos();

        private Read() {}

        @Override
        public void close() {
            long[] spent = SPENT.get();
            spent[0] += System.nanoTime() - wall0;
            spent[1] += CpuClock.threadNanos() - cpu0;
        }
    }

    /** Starts timing a read of a sample's file: {@code try (var r = FetchClock.read()) {...}}. */
    public static Read read() {
        return new Read();
    }

    /** Wall-clock nanoseconds this thread spent in reads, in all. */
    public static long wallNanos() {
        return SPENT.get()[0];
    }

    /** CPU nanoseconds this thread spent in reads, in all. */
    public static long cpuNanos() {
        return SPENT.get()[1];
    }
}
