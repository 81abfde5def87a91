package io.minato.sample;

import io.minato.spi.Patch;
import io.minato.spi.Steps;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.flink.metrics.MetricGroup;

/**
 * Prepared patches, and the state of samples cut off on the fast path, parked in this JVM while
 * only their identity travels through Flink.
 *
 * <p>A prepared sample is a pure function of its task (seed, epoch, index, case), so a record need
 * not carry its 1-10 MiB patch between two operators of the same TaskManager: the sending
 * serializer parks the patch here and writes the task; the receiving one takes it back. Only for a
 * receiver known to run in the sender's TaskManager: receivers say where they run ({@link
 * #receiving}), and a producer asks ({@link #receivesHere}) before it lets a sample wait here
 * ({@link PreparedSample#handOff}); every other sample carries its bytes, so that it crosses to
 * another TaskManager once, as bytes, and nothing waits to find out where its receiver is. That
 * saves two copies per operator boundary and, above all, Flink's spilling of every record over 5
 * MiB to a temporary file on the receiving side (SpillingAdaptiveSpanningRecordDeserializer: a
 * write, a read and a delete of each sample). Correctness never depends on this store: a receiver
 * that finds nothing (a replay after a restore, an entry dropped) gets the bare identity and the
 * trainer prepares the sample again, bit-identically. An unfinished sample (a fast worker's {@link
 * io.minato.spi.Steps} at the step where its deadline passed, with what it cut so far) travels to
 * the slow path the same way; one not found there is prepared from the start.
 *
 * <p>Bounded, since identities are too small for Flink's byte-sized network buffers to hold the
 * workers back: at most as many samples as the running operators have {@link #reserve reserved}
 * (their prefetch, as PyTorch's prefetch_factor x workers), and at most a quarter of the heap (512
 * MiB at most) in bytes. When full, a sender waits for receivers to take what is parked: that wait
 * is the loader's backpressure. After {@link #WAIT_NANOS} it sends the bytes inline instead, so
 * that nothing waits forever. What a failed attempt parked is dropped when the job restores ({@link
 * #startedAfter}) and what an ended job left once nothing runs here; as a last resort, an entry
 * that receivers have gone on not taking for {@link #ORPHAN_AGE_NANOS} while they took others is
 * dropped to make room. A store that nobody takes from (every device's consumer paused, for
 * minutes) keeps what it holds: those entries are alive, and dropping them made the trainers
 * prepare each again.
 */
public final class SampleHandoff {
    /** How long a sender waits for room before sending the bytes inline. */
    public static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    /**
     * An entry that receivers went on not taking this long after it was parked, while they took
     * others, is taken to be an orphan (of a job that left it in a session cluster's JVM) when room
     * is needed.
     */
    static final long ORPHAN_AGE_NANOS = TimeUnit.MINUTES.toNanos(2);

    private static final SampleHandoff JVM =
            new SampleHandoff(Math.min(512L << 20, Runtime.getRuntime().maxMemory() / 4));

    /** Samples each worker may have parked: as PyTorch DataLoader's default prefetch_factor. */
    public static final int PREFETCH_PER_WORKER = 2;

    /** What is parked for a task: its prepared patch, or its unfinished preparation. */
    private enum Kind {
        PATCH,
        UNFINISHED
    }

    private record Key(SampleTask task, Kind kind) {}

    private record Entry(Key key, Object value, long bytes, long parkedNanos) {}

    private final long boundBytes;
    private int reservedSamples;

    /** Receivers running in this JVM, by job, operator, subtask and TaskManager; with a count. */
    private final HashMap<Receiver, Integer> receivers = new HashMap<>();

    /** Oldest first; a task may be parked more than once (a replay beside an orphan). */
    private final ArrayDeque<Entry> byAge = new ArrayDeque<>();

    private final HashMap<Key, ArrayDeque<Entry>> parked = new HashMap<>();
    private long bytes;
    private final int[] counts = new int[Kind.values().length]; // parked entries per kind
    private long handedOff;
    private long sentInline;
    private long missed;
    private long orphansDropped;
    private final LongSupplier clock; // System::nanoTime, but in tests
    private long lastTakeNanos; // by the clock: when a receiver last took (or looked for) one

    SampleHandoff(long boundBytes) {
        this(boundBytes, System::nanoTime);
    }

    SampleHandoff(long boundBytes, LongSupplier clock) {
        this.boundBytes = boundBytes;
        this.clock = clock;
        this.lastTakeNanos = clock.getAsLong();
    }

    /** This JVM's store, shared by every operator of every job in it. */
    public static SampleHandoff jvm() {
        return JVM;
    }

    /**
     * Adds {@code samples} to how many may be parked at once, for as long as the caller runs (an
     * operator: from open to close).
     */
    public Reservation reserve(int samples) {
        if (samples < 1) {
            throw new IllegalArgumentException("reserve at least one sample: " + samples);
        }
        synchronized (this) {
            reservedSamples += samples;
            notifyAll();
        }
        return new Reservation(samples);
    }

    /** A share of the store's capacity; closing it gives the share back. */
    public final class Reservation implements AutoCloseable {
        private final int samples;
        private boolean closed;

        private Reservation(int samples) {
            this.samples = samples;
        }

        @Override
        public void close() {
            synchronized (SampleHandoff.this) {
                if (!closed) {
                    closed = true;
                    reservedSamples -= samples;
                    dropIfNobodyRuns();
                }
            }
        }
    }

    /**
     * A subtask that takes samples: {@code operator} names its operator in the job ({@link
     * #BATCHER}, {@link #SLOW_PATH}, {@link #TRAINER}), {@code taskManager} the TaskManager it runs
     * in ({@link #taskManagerOf}). Several TaskManagers can share a JVM (a MiniCluster): a sample
     * waits here only for a receiver of the same TaskManager, so that tests with several see the
     * bytes travel as a cluster would.
     */
    public record Receiver(String job, String operator, int subtask, String taskManager) {}

    /** The receivers of the samples' operators: device batchers, slow workers, trainers. */
    public static final String BATCHER = "batcher";

    public static final String SLOW_PATH = "slow-path";
    public static final String TRAINER = "trainer";

    /**
     * The TaskManager an operator runs in, from its metric group (Flink's {@code <tm_id>} scope
     * variable); "" where there is none (an operator test harness: one process, one place).
     */
    public static String taskManagerOf(MetricGroup group) {
        String id = group.getAllVariables().get("<tm_id>");
        return id == null ? "" : id;
    }

    /**
     * Says that {@code receiver} runs here, for as long as the returned registration is open (an
     * operator: from its setup, before any operator of its task opens, to its close).
     */
    public Registration receiving(Receiver receiver) {
        synchronized (this) {
            receivers.merge(receiver, 1, Integer::sum);
        }
        return new Registration() {
            private boolean closed;

            @Override
            public void close() {
                synchronized (SampleHandoff.this) {
                    if (!closed) {
                        closed = true;
                        receivers.computeIfPresent(receiver, (r, n) -> n == 1 ? null : n - 1);
                        dropIfNobodyRuns();
                    }
                }
            }
        };
    }

    /**
     * Whether {@code receiver} runs in this JVM and TaskManager now. A receiver not yet set up (or
     * in another TaskManager) is not: its samples go with their bytes.
     */
    public synchronized boolean receivesHere(Receiver receiver) {
        return receivers.containsKey(receiver);
    }

    /** An open registration; closing it ends it (once). */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Whether one more entry of {@code kind} and {@code size} bytes finds no room. Each kind has
     * the reserved count to itself, so that unfinished states waiting for the slow path never keep
     * the slow path's own results out; bytes are shared. One patch always fits when none is parked.
     */
    private boolean full(Kind kind, long size) {
        int n = counts[kind.ordinal()];
        return (kind == Kind.UNFINISHED || n > 0)
                && (n >= reservedSamples || bytes + size > boundBytes);
    }

    /**
     * Waits up to {@code millis} for room for a patch of {@code size} bytes, the wait {@link
     * #offer(SampleTask, Patch)} would make, so that a sender can wait in slices, between which its
     * task takes a checkpoint, before it offers the patch.
     *
     * @return true when a patch of that size would be parked now (or is never parked, and so never
     *     waits)
     */
    public synchronized boolean awaitRoom(long size, long millis) throws InterruptedException {
        if (size > boundBytes || reservedSamples == 0) {
            return true;
        }
        return roomBy(Kind.PATCH, size, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis));
    }

    /**
     * Whether an entry of {@code kind} and {@code size} bytes finds room by {@code deadline}
     * ({@link System#nanoTime}), dropping orphans and waiting for takers meanwhile. Holds the lock.
     */
    private boolean roomBy(Kind kind, long size, long deadline) throws InterruptedException {
        while (full(kind, size)) {
            if (dropOrphans()) {
                continue;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    /**
     * Parks the patch of {@code task}, waiting up to {@link #WAIT_NANOS} for room.
     *
     * @return false when there was no room, or nothing in this JVM reserved any: send the bytes
     *     inline
     */
    public boolean offer(SampleTask task, Patch patch) {
        if (holds(task, patch)) {
            return true; // its sender parked it before it was serialized (offerWithin)
        }
        return offer(new Key(task, Kind.PATCH), patch, patch.bytes(), WAIT_NANOS, true);
    }

    /**
     * Parks the patch of {@code task} if there is room within {@code millis}, the wait {@link
     * #offer(SampleTask, Patch)} would make cut into a slice: a sender that waits in slices, its
     * task's mail running between them, parks the patch before it emits the sample, and its
     * serialization then finds it parked and waits no more.
     *
     * @return true when parked (or never parked: too big, or nothing reserved any room), false when
     *     the slice passed without room
     */
    public boolean offerWithin(SampleTask task, Patch patch, long millis) {
        synchronized (this) {
            if (patch.bytes() > boundBytes || reservedSamples == 0) {
                return true; // the serializer sends it inline without waiting
            }
        }
        return offer(
                new Key(task, Kind.PATCH),
                patch,
                patch.bytes(),
                TimeUnit.MILLISECONDS.toNanos(millis),
                false);
    }

    /** Whether {@code patch} itself is parked for {@code task}. */
    private synchronized boolean holds(SampleTask task, Patch patch) {
        ArrayDeque<Entry> entries = parked.get(new Key(task, Kind.PATCH));
        if (entries != null) {
            for (Entry e : entries) {
                if (e.value() == patch) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Parks the unfinished preparation of {@code task} (the slow path resumes it) if there is room
     * now. It never waits: the slow path is the only taker of these, and it may itself be waiting
     * for room for its results; a fast worker sends the state inline rather than wait on that.
     *
     * @return false when there was no room, or nothing in this JVM reserved any: send it inline
     */
    public boolean offer(SampleTask task, Steps<?> unfinished) {
        return offer(new Key(task, Kind.UNFINISHED), unfinished, unfinished.heldBytes(), 0, true);
    }

    /**
     * Parks {@code value} if there is room within {@code waitNanos}; a miss counts as sent inline
     * where {@code inlineIfNot}.
     */
    private synchronized boolean offer(
            Key key, Object value, long size, long waitNanos, boolean inlineIfNot) {
        if (size > boundBytes || reservedSamples == 0) {
            // Too big to park at all, or no operator of a running loader in this JVM.
            sentInline++;
            return false;
        }
        long deadline = System.nanoTime() + waitNanos;
        boolean room;
        try {
            room = roomBy(key.kind(), size, deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            room = false;
        }
        if (!room) {
            if (inlineIfNot) {
                sentInline++;
            }
            return false;
        }
        Entry e = new Entry(key, value, size, clock.getAsLong());
        parked.computeIfAbsent(key, k -> new ArrayDeque<>(1)).addLast(e);
        byAge.addLast(e);
        bytes += size;
        counts[key.kind().ordinal()]++;
        handedOff++;
        return true;
    }

    /** The patch parked for {@code task}, removed from the store; null if there is none. */
    public Patch take(SampleTask task) {
        return (Patch) take(new Key(task, Kind.PATCH));
    }

    /**
     * The unfinished preparation parked for {@code task}, removed from the store; null if there is
     * none.
     */
    public Steps<?> takeUnfinished(SampleTask task) {
        return (Steps<?>) take(new Key(task, Kind.UNFINISHED));
    }

    private synchronized Object take(Key key) {
        lastTakeNanos = clock.getAsLong();
        ArrayDeque<Entry> entries = parked.get(key);
        if (entries == null) {
            missed++;
            return null;
        }
        Entry e = entries.pollFirst();
        if (entries.isEmpty()) {
            parked.remove(key);
        }
        byAge.removeFirstOccurrence(e); // usually the oldest: near the head
        bytes -= e.bytes();
        counts[key.kind().ordinal()]--;
        notifyAll();
        return e.value();
    }

    /**
     * Drops everything parked so far: called when a job restores from a checkpoint, since the
     * records that referred to those entries died with the failed attempt (a restored record that
     * still refers to one finds nothing and its sample is prepared again).
     */
    public synchronized void dropAll() {
        orphansDropped += byAge.size();
        byAge.clear();
        parked.clear();
        bytes = 0;
        Arrays.fill(counts, 0);
        notifyAll();
    }

    /**
     * Drops everything once no operator that parks or takes samples runs in this JVM: what is
     * parked then belongs to a job that ended (a failed one leaves what it had sent), and nothing
     * can take it. Left there, it filled the store for the next job of a session cluster, whose
     * senders each waited {@link #WAIT_NANOS} for room until the entries aged out.
     */
    private void dropIfNobodyRuns() {
        if (reservedSamples == 0 && receivers.isEmpty() && !byAge.isEmpty()) {
            dropAll();
        }
    }

    /**
     * Drops what a failed attempt parked, when this operator starts after one: restored from a
     * checkpoint, or restarted without one to restore (a failure before the first completed).
     */
    public void startedAfter(boolean restored, int attemptNumber) {
        if (restored || attemptNumber > 0) {
            dropAll();
        }
    }

    /**
     * Drops the entries parked at least the orphan age before the last take: receivers took others
     * all that while; true if any was dropped.
     */
    private boolean dropOrphans() {
        boolean dropped = false;
        while (!byAge.isEmpty()
                && lastTakeNanos - byAge.peekFirst().parkedNanos() >= ORPHAN_AGE_NANOS) {
            Entry e = byAge.pollFirst();
            ArrayDeque<Entry> entries = parked.get(e.key());
            entries.remove(e);
            if (entries.isEmpty()) {
                parked.remove(e.key());
            }
            bytes -= e.bytes();
            counts[e.key().kind().ordinal()]--;
            orphansDropped++;
            dropped = true;
        }
        return dropped;
    }

    /** Samples parked now. */
    public synchronized int parked() {
        return byAge.size();
    }

    /** Bytes parked now. */
    public synchronized long bytes() {
        return bytes;
    }

    /** Samples whose patch or unfinished preparation was parked (over this JVM's life). */
    public synchronized long handedOff() {
        return handedOff;
    }

    /** Samples sent with their bytes because the store stayed full. */
    public synchronized long sentInline() {
        return sentInline;
    }

    /** Takes that found nothing: those samples are prepared again where they are needed. */
    public synchronized long missed() {
        return missed;
    }

    public synchronized long orphansDropped() {
        return orphansDropped;
    }
}
