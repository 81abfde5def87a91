package io.minato.stats;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** CPU time of the calling thread (user + system), the unit preparation cost is accounted in. */
public final class CpuClock {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final boolean SUPPORTED = THREADS.isCurrentThreadCpuTimeSupported() && enable();

    private CpuClock() {}

    private static boolean enable() {
        if (!THREADS.isThreadCpuTimeEnabled()) {
            THREADS.setThreadCpuTimeEnabled(true);
        }
        return THREADS.isThreadCpuTimeEnabled();
    }

    /** Nanoseconds of CPU this thread used; wall-clock nanoseconds where the JVM cannot tell. */
    public static long threadNanos() {
        return SUPPORTED ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }
}
