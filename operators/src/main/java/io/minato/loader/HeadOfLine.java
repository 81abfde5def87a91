package io.minato.loader;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;

/**
 * How long a job's loaders held a prepared batch back behind an unfinished one (head-of-line
 * blocking), as a clock the trainers read: the part of a device's wait for a batch that was not the
 * workers being behind. One per job attempt in a TaskManager, named as the {@link WorkerScheduler}
 * is ({@link WorkerScheduler#inTaskManager}), so a trainer sees only the loaders of its own
 * TaskManager (the embedded run, a one-TaskManager cluster); elsewhere its whole wait counts as
 * behind.
 *
 * <p>The in-order loaders hold batches back whenever a later batch is ready and the head is not
 * ({@link InOrderBatches}). Minato's operators never hold one: a finished sample joins the next
 * batch being filled, so nothing of theirs runs this clock.
 */
public final class HeadOfLine {
    private static final int JOBS = 16;

    private static final Map<String, HeadOfLine> BY_JOB =
            new LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, HeadOfLine> eldest) {
                    return size() > JOBS; // a few objects per finished job, not a leak
                }
            };

    private final LongSupplier clock;
    private final Set<Object> holding = Collections.newSetFromMap(new IdentityHashMap<>());
    private long since;
    private long total;

    HeadOfLine(LongSupplier clock) {
        this.clock = clock;
    }

    /** The clock named {@code job} ({@link WorkerScheduler#inTaskManager}) in this JVM. */
    public static HeadOfLine of(String job) {
        synchronized (BY_JOB) {
            return BY_JOB.computeIfAbsent(job, j -> new HeadOfLine(System::nanoTime));
        }
    }

    /**
     * The clock of the job attempt that {@code context} runs in, in the TaskManager of the operator
     * whose metrics are {@code metrics}.
     */
    public static HeadOfLine of(RuntimeContext context, MetricGroup metrics) {
        return of(
                WorkerScheduler.inTaskManager(
                        WorkerScheduler.key(
                                context.getJobInfo().getJobId().toString(),
                                context.getTaskInfo().getAttemptNumber()),
                        metrics));
    }

    /** Whether {@code loader} holds a ready batch back behind an unfinished one from now on. */
    public synchronized void hold(Object loader, boolean held) {
        long now = clock.getAsLong();
        boolean before = !holding.isEmpty();
        if (held) {
            holding.add(loader);
        } else {
            holding.remove(loader);
        }
        boolean after = !holding.isEmpty();
        if (!before && after) {
            since = now;
        } else if (before && !after) {
            total += now - since;
        }
    }

    /** Nanoseconds some loader held a batch back, in all, up to {@code now} ({@code nanoTime}). */
    public synchronized long heldNanos(long now) {
        return total + (holding.isEmpty() ? 0 : Math.max(0, now - since));
    }
}
