package io.minato.loader;

import io.minato.loader.pacing.JobQueues;
import io.minato.sample.SampleHandoff;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import org.apache.flink.metrics.MetricGroup;

/**
 * MinatoLoader's worker scheduler: one per job attempt in each TaskManager ({@link
 * #inTaskManager}). It decides how many of the job's preparation workers, fast and slow, may
 * prepare at once (the active workers), and which kind goes first, from the devices' batch queues
 * and the process's CPU use.
 *
 * <p>Workers take a permit before they prepare (a fast worker for a whole attempt, a slow one for
 * each step) and give it back before they emit, so a worker held back by a full queue never holds a
 * permit. Every {@link #TICK_NANOS} the count is revised ({@link #decide}):
 *
 * <ul>
 *   <li><b>hungry</b> (some device's queue has room: its accelerator waits, or is about to): one
 *       more active worker per tick while the process leaves at least half a core idle (workers
 *       waiting on reads, not on the CPU), one fewer while the CPU is full and more workers are
 *       active than there are cores; fast samples first while the CPU has room, slow ones first
 *       once it is full (the run is then bound by the CPU, and the longest work started first ends
 *       it soonest: fast samples first had left the slow ones for its end).
 *   <li><b>fed</b> (every device's queue is full): one fewer per tick while the CPU is
 *       oversubscribed and the workers hold more cores than the trainers and Flink leave them (a
 *       trainer on the CPU gets its cores back); slow samples first, so the backlog drains while
 *       the devices have work and the end of the run waits less.
 * </ul>
 *
 * <p>The queues are those of the trainers in this JVM, looked at directly, and every device's,
 * wherever its trainer runs, as the workers' coordinator last told ({@link #jobQueues}): the
 * trainers report their queues to the JobManager ({@link io.minato.loader.pacing}), so the
 * scheduler of a TaskManager that holds only workers paces them as well. The CPU is this
 * TaskManager's own. Until some queue is known the count stays at its start, {@code min(cores,
 * workers)}, fast first. Never fewer than one active worker, never more than registered.
 */
public final class WorkerScheduler {
    /** Which side of the fast/slow split a worker serves. */
    public enum Kind {
        FAST,
        SLOW
    }

    /** How often the active count is revised. */
    static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /** The CPU counts as full within this many cores of all of them. */
    static final double CPU_FULL_MARGIN = 0.25;

    /** How long a waiting worker sleeps before it looks at its mailbox again. */
    static final long WAIT_SLICE_MILLIS = 5;

    private static final Map<String, WorkerScheduler> BY_JOB = new HashMap<>();

    private final String job;
    private final int cores;
    private final LongSupplier clock;
    private final LongSupplier processCpu;

    private final int[] registered = new int[Kind.values().length];
    private final int[] waiting = new int[Kind.values().length];
    private final List<Queue> queues = new ArrayList<>();
    private int registrations;
    private int running;
    private int active;
    private boolean started;
    private boolean revised;

    private long lastTick;
    private long lastProcessCpu;
    private long prepCpu;
    private long lastPrepCpu;
    private boolean hungry;
    private boolean cpuFull;
    private boolean known;
    private JobQueues jobQueues = JobQueues.NONE;

    /** Time-weighted sum of the active count, for its mean. */
    private double activeNanos;

    private long since;

    WorkerScheduler(String job, int cores, LongSupplier clock, LongSupplier processCpu) {
        if (cores < 1) {
            throw new IllegalArgumentException("cores must be >= 1: " + cores);
        }
        this.job = job;
        this.cores = cores;
        this.clock = clock;
        this.processCpu = processCpu;
    }

    /**
     * The scheduler of job attempt {@code attempt} ({@link #key}) in the TaskManager whose operator
     * has {@code metrics}, made on first use; gone when all unregister. Its workers and trainers
     * meet there.
     */
    public static WorkerScheduler of(String attempt, MetricGroup metrics) {
        return of(inTaskManager(attempt, metrics));
    }

    /** The scheduler named {@code job} in this JVM, made on first use. */
    static WorkerScheduler of(String job) {
        synchronized (BY_JOB) {
            return BY_JOB.computeIfAbsent(
                    job,
                    j ->
                            new WorkerScheduler(
                                    j,
                                    Runtime.getRuntime().availableProcessors(),
                                    System::nanoTime,
                                    TaskManagerUsage::cpuNow));
        }
    }

    /**
     * The schedulers of job attempt {@code key} ({@link #key}) in this JVM now: one per TaskManager
     * whose workers or trainers registered.
     */
    public static List<WorkerScheduler> ofAttempt(String key) {
        synchronized (BY_JOB) {
            List<WorkerScheduler> found = new ArrayList<>();
            BY_JOB.forEach(
                    (name, scheduler) -> {
                        if (name.startsWith(key + "@")) {
                            found.add(scheduler);
                        }
                    });
            return found;
        }
    }

    /** Whether {@code job} has a scheduler in this JVM now. */
    static boolean live(String job) {
        synchronized (BY_JOB) {
            return BY_JOB.containsKey(job);
        }
    }

    /**
     * The name of a job's scheduler in a JVM: per attempt, so that a restarted job's workers never
     * meet a failed attempt's.
     */
    public static String key(String jobId, int attempt) {
        return jobId + "/" + attempt;
    }

    /**
     * The name of a job attempt's scheduler in the TaskManager whose operator has {@code metrics}:
     * one per TaskManager, also where several share a JVM (a MiniCluster), as on a cluster.
     */
    static String inTaskManager(String key, MetricGroup metrics) {
        return key + "@" + SampleHandoff.taskManagerOf(metrics);
    }

    /** Something registered with a scheduler; closing it unregisters. */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    private record Queue(IntSupplier held, int depth) {}

    /** Adds a worker of {@code kind} to those whose preparation this scheduler paces. */
    public Registration worker(Kind kind) {
        synchronized (this) {
            registered[kind.ordinal()]++;
            registrations++;
            if (!started) {
                started = true;
                since = lastTick = clock.getAsLong();
                lastProcessCpu = processCpu.getAsLong();
            }
            fitActive();
        }
        return once(
                () -> {
                    synchronized (this) {
                        registered[kind.ordinal()]--;
                        fitActive();
                        notifyAll();
                    }
                });
    }

    /**
     * Adds a device's batch queue of {@code depth} batches; {@code held} says how many it holds now
     * (the one in training included).
     */
    public Registration queue(IntSupplier held, int depth) {
        Queue q = new Queue(held, depth);
        synchronized (this) {
            queues.add(q);
            registrations++;
        }
        return once(
                () -> {
                    synchronized (this) {
                        queues.remove(q);
                    }
                });
    }

    /**
     * The start, {@code min(cores, workers)}, until a tick has revised the count; after that the
     * count only stays within one and the workers registered.
     */
    private void fitActive() {
        int ceiling = Math.max(1, workers());
        active = revised ? Math.min(active, ceiling) : Math.min(cores, ceiling);
    }

    private Registration once(Runnable undo) {
        return new Registration() {
            private boolean closed;

            @Override
            public void close() {
                synchronized (WorkerScheduler.this) {
                    if (closed) {
                        return;
                    }
                    closed = true;
                    undo.run();
                    registrations--;
                }
                if (registrationsLeft() == 0) {
                    synchronized (BY_JOB) {
                        if (BY_JOB.get(job) == WorkerScheduler.this && registrationsLeft() == 0) {
                            BY_JOB.remove(job);
                        }
                    }
                }
            }
        };
    }

    private synchronized int registrationsLeft() {
        return registrations;
    }

    /** The workers this scheduler paces now. */
    public synchronized int workers() {
        return registered[0] + registered[1];
    }

    /**
     * Takes a permit for a worker of {@code kind} if one is free and no worker of the kind that
     * goes first waits for it.
     */
    public synchronized boolean tryAcquire(Kind kind) {
        tick();
        Kind first = (hungry && !cpuFull) || !known ? Kind.FAST : Kind.SLOW;
        if (running < active && (kind == first || waiting[first.ordinal()] == 0)) {
            running++;
            return true;
        }
        return false;
    }

    /**
     * Gives a permit back, with the CPU the worker used while holding it (the preparation's share
     * of the process's CPU).
     */
    public synchronized void release(long cpuNanos) {
        if (running <= 0) {
            throw new IllegalStateException("release without a permit");
        }
        running--;
        prepCpu += Math.max(0, cpuNanos);
        notifyAll();
    }

    /**
     * Waits for a permit, calling {@code between} every few milliseconds until one is free: a
     * worker passes a yield to its task's mailbox there, so that checkpoint barriers and other mail
     * go on while it waits.
     */
    public void acquire(Kind kind, Between between) throws Exception {
        if (tryAcquire(kind)) {
            return;
        }
        synchronized (this) {
            waiting[kind.ordinal()]++;
        }
        try {
            while (true) {
                if (between.yielded()) {
                    if (tryAcquire(kind)) {
                        return;
                    }
                    continue;
                }
                // Looked at and waited for under one lock: a release in between is not missed
                // (a missed one cost a whole slice, half a fast sample's preparation).
                synchronized (this) {
                    if (tryAcquire(kind)) {
                        return;
                    }
                    wait(WAIT_SLICE_MILLIS);
                }
            }
        } finally {
            synchronized (this) {
                waiting[kind.ordinal()]--;
                notifyAll();
            }
        }
    }

    /** What a waiting worker does between looks at the permits. */
    @FunctionalInterface
    public interface Between {
        /** Runs other work of the worker's task if there is some; whether there was. */
        boolean yielded() throws Exception;
    }

    /** How every device's queue stands, wherever its trainer runs, as the job last said. */
    public synchronized void jobQueues(JobQueues view) {
        jobQueues = view;
    }

    /**
     * Whether this scheduler saw a device's queue: revised its count by one, or was told of one (a
     * trainer here, or the job's queues from the workers' coordinator) before its workers ran out
     * of work, a tick too soon to revise by it on a short run. Else it paced blind.
     */
    public synchronized boolean sawQueues() {
        return revised || !queues.isEmpty() || jobQueues.known();
    }

    /** How many workers hold a permit now. */
    synchronized int running() {
        return running;
    }

    /** How many workers may prepare at once now (0 before the first worker registers). */
    public synchronized int active() {
        return active;
    }

    /** The active count's mean over time since the first worker registered. */
    public synchronized double meanActive() {
        tick();
        long elapsed = lastTick - since;
        return elapsed <= 0 ? active : activeNanos / elapsed;
    }

    private void tick() {
        long now = clock.getAsLong();
        long elapsed = now - lastTick;
        if (!started || elapsed < TICK_NANOS) {
            return;
        }
        long cpu = processCpu.getAsLong();
        double busyCores = (double) (cpu - lastProcessCpu) / elapsed;
        double prepCores = (double) (prepCpu - lastPrepCpu) / elapsed;
        activeNanos += (double) active * elapsed;
        lastTick = now;
        lastProcessCpu = cpu;
        lastPrepCpu = prepCpu;
        known = !queues.isEmpty() || jobQueues.known();
        cpuFull = busyCores >= cores - CPU_FULL_MARGIN;
        hungry = jobQueues.hungry();
        for (Queue q : queues) {
            if (q.held().getAsInt() < q.depth()) {
                hungry = true;
                break;
            }
        }
        if (known) {
            revised = true;
            int next = decide(active, workers(), cores, hungry, busyCores, prepCores);
            if (next != active) {
                active = next;
                notifyAll();
            }
        }
    }

    /**
     * The next active count.
     *
     * @param active the count now
     * @param workers workers registered (the ceiling)
     * @param cores the machine's cores
     * @param hungry whether some device's queue has room
     * @param busyCores the process's CPU use over the last tick, in cores
     * @param prepCores the part of it the workers used preparing samples
     */
    static int decide(
            int active,
            int workers,
            int cores,
            boolean hungry,
            double busyCores,
            double prepCores) {
        int next = active;
        boolean cpuFull = busyCores >= cores - CPU_FULL_MARGIN;
        if (hungry) {
            if (busyCores < cores - 0.5) {
                next = active + 1;
            } else if (cpuFull && active > cores) {
                next = active - 1;
            }
        } else {
            double others = Math.max(0, busyCores - prepCores);
            // The cores the trainers and Flink leave, a partly used one counted as free: Flink's
            // own share of a fraction of a core takes no worker away, a trainer's cores do.
            if (cpuFull && active > Math.max(1, (int) Math.ceil(cores - others - 1e-9))) {
                next = active - 1;
            }
        }
        return Math.max(1, Math.min(next, Math.max(1, workers)));
    }
}
