package io.minato.trainer;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * Synchronous data parallelism among the trainer replicas of one job, in one JVM: the replicas of
 * the devices meet here once per global step, as DDP's all-reduce does.
 *
 * <p>Each replica posts the gradient of its own batch's mean loss and the batch's sample count; the
 * last one to post computes the average weighted by samples, which is exactly the gradient of the
 * mean loss over the concatenated batch, and every replica applies that same update. A replica out
 * of data posts nothing (zero samples) and still applies the update, so that uneven batch counts at
 * the end of input lose no sample; when every replica posts nothing, training is over. A replica
 * whose every sample of a batch was left out as bad input posts {@link #NO_SAMPLES}: nothing this
 * step, more to come. It applies the others' update too, and a step at which no replica had a
 * sample but one posted that is a step without samples, which changes no parameter.
 *
 * <p>Checkpoints: Flink snapshots the replicas one by one, at different moments. The first replica
 * to snapshot a checkpoint {@link Member#cut cuts} the group: no further step completes until every
 * replica has {@link Member#snapshotted snapshotted} it, so every replica's state in the checkpoint
 * is at the same global step. A replica waiting in the all-reduce of a held step has not touched
 * its parameters and counts as being at a step boundary. A replica whose input ended still trains
 * what it holds, and its task takes no snapshot until training is over: it takes its state at each
 * cut itself ({@link Member#pendingCut}) and gives that state to the checkpoint later.
 *
 * <p>The group lives in replica 0's TaskManager. Replicas in that TaskManager find it by its id
 * (the job, its attempt and the TaskManager); replicas in other TaskManagers reach it through a
 * {@link ReplicaLink}, as a {@link RemoteMember} that makes the same calls over TCP ({@link
 * Replicas} says which). A replica that waits for the others longer than the join timeout fails
 * with a message saying so.
 */
public final class ReplicaGroup {

    /**
     * What a replica posts for a step it has no sample for while its input goes on, and the result
     * of a step no replica had a sample for: no values (over a replica link, an equal empty array).
     */
    public static final float[] NO_SAMPLES = new float[0];

    /**
     * Checks what a replica posts: a gradient with samples > 0, or with none, null (out of data) or
     * {@link #NO_SAMPLES}.
     */
    static void checkPost(float[] gradient, int samples) {
        if (samples < 0
                || (gradient == null && samples != 0)
                || (gradient != null && samples == 0 && gradient.length != 0)) {
            throw new IllegalArgumentException("a gradient goes with samples > 0");
        }
    }

    /** How long a replica waits for the others to join before it gives up. */
    public static final Duration JOIN_TIMEOUT = Duration.ofSeconds(60);

    private static final ConcurrentHashMap<String, ReplicaGroup> GROUPS = new ConcurrentHashMap<>();

    private final String id;
    private final int size;
    private final Duration joinTimeout;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Everything below is guarded by lock.
    private final Seat[] seats;
    private int joinedCount;
    private int leftCount;
    private int postedCount;
    private boolean started; // the step counter is set (by the initial state)
    private long published; // global steps completed
    private float[] result; // the average of step `published`
    private boolean done;
    private Throwable aborted; // non-null: every wait throws
    private byte[] initialState; // null until replica 0 broadcast it
    private int initialCount;
    private long cutCheckpoint = -1; // -1: no cut held
    // Told whenever what a writer takes beyond its queue changes (the links to other
    // TaskManagers).
    private final CopyOnWriteArrayList<Watch> watches = new CopyOnWriteArrayList<>();

    /**
     * Told, under the group's lock, whether a cut holds the group and whether a replica other than
     * the watched one starves, now and on every change; must not block.
     */
    interface GroupWatcher {
        /**
         * @param pendingCut the checkpoint a cut holds the group for, -1 for none
         */
        void changed(long pendingCut, boolean othersStarving);
    }

    private record Watch(int replica, GroupWatcher watcher) {}

    /** One replica's place in the group, guarded by the group's lock. */
    private static final class Seat {
        boolean joined;
        boolean ended; // its input ended: it no longer starves
        boolean starving; // its trainer waits for a batch with none queued (Member#starving)
        boolean cutTaken; // its snapshot of the pending cut is taken
        long initialStep; // the step of the state it started from
        Post post; // what it posted for the step under way; null: nothing yet

        /** Posted for the step under way: it waits in the all-reduce ({@link Member#parked}). */
        boolean parked() {
            return post != null;
        }
    }

    /** A replica's post for one step: a gradient and its samples (see {@link #checkPost}). */
    private record Post(float[] gradient, int samples) {}

    private ReplicaGroup(String id, int size, Duration joinTimeout) {
        this.id = id;
        this.size = size;
        this.joinTimeout = joinTimeout;
        seats = new Seat[size];
        for (int r = 0; r < size; r++) {
            seats[r] = new Seat();
        }
    }

    /**
     * Joins replica {@code replica} of {@code size} to the group {@code id} in this JVM, creating
     * it for the first one.
     */
    public static Member join(String id, int size, int replica) {
        return join(id, size, replica, JOIN_TIMEOUT);
    }

    static LocalMember join(String id, int size, int replica, Duration joinTimeout) {
        if (size < 1 || replica < 0 || replica >= size) {
            throw new IllegalArgumentException(
                    "replica " + replica + " of " + size + " in group " + id);
        }
        ReplicaGroup group =
                GROUPS.computeIfAbsent(id, k -> new ReplicaGroup(k, size, joinTimeout));
        if (group.size != size) {
            throw new IllegalStateException(
                    "group " + id + " has " + group.size + " replicas, not " + size);
        }
        group.register(replica);
        return group.new LocalMember(replica);
    }

    private void register(int replica) {
        lock.lock();
        try {
            if (seats[replica].joined) {
                throw new IllegalStateException(
                        "replica " + replica + " joined group " + id + " twice");
            }
            seats[replica].joined = true;
            joinedCount++;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * One replica's handle on its group: the calls of one global step and of a checkpoint cut. The
     * group's own ({@link LocalMember}) or one reaching it from another TaskManager ({@link
     * RemoteMember}).
     */
    public interface Member {
        int replica();

        int size();

        /**
         * The training state every replica starts from: replica 0 gives its own (fresh or restored)
         * and gets it back; the others start from it, so that replicas never diverge however each
         * was initialised. Every replica gives its step: replicas restored from different steps (a
         * checkpoint cut that failed) stop the run instead of training on.
         */
        byte[] initialState(byte[] mine, long step) throws InterruptedException;

        /** The step the group starts from: that of the initial state. */
        long startStep();

        /**
         * Posts this replica's gradient for global step {@code step} (1-based) and waits for the
         * sample-weighted average of all replicas' gradients.
         *
         * @param gradient the gradient of this replica's mean loss; with {@code samples} 0, null
         *     (out of data) or {@link #NO_SAMPLES} (none this step, more to come)
         * @return the averaged gradient; {@link #NO_SAMPLES} when no replica had a sample but one
         *     posted {@link #NO_SAMPLES}; null when no replica had a sample: training is over
         */
        float[] allReduce(long step, float[] gradient, int samples) throws InterruptedException;

        /**
         * Whether this replica waits in the all-reduce of a step the group has not completed: its
         * parameters are those of the last completed step, so a snapshot may read them.
         */
        boolean parked();

        /**
         * Holds the group at its current step for checkpoint {@code checkpointId} until every
         * replica still training has snapshotted it. A later checkpoint replaces an earlier one
         * that some replica never snapshotted (aborted); an older one changes nothing.
         */
        void cut(long checkpointId);

        /**
         * The checkpoint a cut holds the group for, -1 for none. A replica whose input ended takes
         * its state for that checkpoint when it sees it, as its task cannot snapshot until training
         * is over.
         */
        long pendingCut();

        /** Whether a cut holds the group: writers then accept batches beyond their queue. */
        default boolean cutPending() {
            return pendingCut() >= 0;
        }

        /**
         * This replica's trainer waits for a batch and has none queued ({@code true}), or has one
         * again or is out of input ({@code false}). Its batches may sit upstream behind other
         * devices' samples that those devices' full queues hold back.
         */
        void starving(boolean starving);

        /**
         * Whether another replica still training starves: this replica's writer then accepts
         * batches beyond its queue, so that the upstream operators it shares with the starving one
         * move on. Only then: a writer that took batches whenever its step waited for the others
         * would take in the whole input while steps alternate, and its task would then wait out the
         * training of all of it at the end of input, where it takes no snapshots.
         */
        boolean othersStarving();

        /** This replica's snapshot of {@code checkpointId} is taken; may release the cut. */
        void snapshotted(long checkpointId);

        /**
         * This replica's input has ended: it no longer starves, and once what it holds is trained
         * it posts only empty steps. Cuts still wait for its snapshot, which it takes itself.
         */
        void end();

        /** Wakes every replica with {@code cause}: a replica failed, the job is cancelled. */
        void abort(Throwable cause);

        /** Leaves the group; the last to leave removes it from the registry. */
        void leave();
    }

    /** One replica's handle on the group in this JVM. */
    final class LocalMember implements Member {
        private final int replica;
        // Run once this replica left, told whether training was over: replica 0's link closes.
        private volatile Consumer<Boolean> afterLeaving = over -> {};

        private LocalMember(int replica) {
            this.replica = replica;
        }

        @Override
        public int replica() {
            return replica;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public byte[] initialState(byte[] mine, long step) throws InterruptedException {
            lock.lockInterruptibly();
            try {
                awaitJoined();
                seats[replica].initialStep = step;
                initialCount++;
                if (replica == 0) {
                    initialState = mine;
                }
                if (initialCount == size) {
                    long[] steps = Arrays.stream(seats).mapToLong(x -> x.initialStep).toArray();
                    if (Arrays.stream(steps).anyMatch(x -> x != steps[0])) {
                        aborted =
                                new IllegalStateException(
                                        "replicas restored from different steps: "
                                                + Arrays.toString(steps));
                    }
                    published = steps[0];
                    started = true;
                    changed.signalAll();
                }
                while (!started) {
                    awaitChange();
                }
                throwIfAborted();
                return initialState;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public long startStep() {
            lock.lock();
            try {
                return published;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public float[] allReduce(long step, float[] gradient, int samples)
                throws InterruptedException {
            checkPost(gradient, samples);
            lock.lockInterruptibly();
            try {
                awaitJoined();
                while (!started) {
                    awaitChange();
                }
                if (done) {
                    return null;
                }
                if (step != published + 1) {
                    throw new IllegalStateException(
                            "device "
                                    + replica
                                    + " is at step "
                                    + (step - 1)
                                    + " but its replicas at step "
                                    + published
                                    + ": replicas restored from different steps");
                }
                if (seats[replica].post != null) {
                    throw new IllegalStateException(
                            "device " + replica + " posted step " + step + " twice");
                }
                if (samples > 0) {
                    for (int r = 0; r < size; r++) {
                        Post other = seats[r].post;
                        if (other != null
                                && other.samples() > 0
                                && other.gradient().length != gradient.length) {
                            throw new IllegalStateException(
                                    "device "
                                            + replica
                                            + " posted "
                                            + gradient.length
                                            + " gradient values, device "
                                            + r
                                            + " "
                                            + other.gradient().length);
                        }
                    }
                }
                seats[replica].post = new Post(gradient, samples);
                postedCount++;
                tryPublish();
                while (published < step && !done) {
                    awaitChange();
                }
                return done && published < step ? null : result;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public boolean parked() {
            lock.lock();
            try {
                return seats[replica].parked();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void cut(long checkpointId) {
            lock.lock();
            try {
                if (done || aborted != null) {
                    return;
                }
                if (checkpointId > cutCheckpoint) {
                    cutCheckpoint = checkpointId;
                    for (Seat seat : seats) {
                        seat.cutTaken = false;
                    }
                    tellWatchers();
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public long pendingCut() {
            lock.lock();
            try {
                return cutCheckpoint;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void starving(boolean starving) {
            lock.lock();
            try {
                if (seats[replica].starving != starving) {
                    seats[replica].starving = starving;
                    tellWatchers();
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public boolean othersStarving() {
            lock.lock();
            try {
                return othersStarve(replica);
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void snapshotted(long checkpointId) {
            lock.lock();
            try {
                if (checkpointId == cutCheckpoint) {
                    seats[replica].cutTaken = true;
                    releaseCutIfTaken();
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void end() {
            lock.lock();
            try {
                seats[replica].ended = true;
                seats[replica].starving = false;
                tellWatchers();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void abort(Throwable cause) {
            lock.lock();
            try {
                if (aborted == null && !done) {
                    aborted = cause;
                    changed.signalAll();
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void leave() {
            boolean over;
            lock.lock();
            try {
                over = done;
                if (!done && aborted == null) {
                    aborted =
                            new IllegalStateException(
                                    "device " + replica + " stopped before training ended");
                    changed.signalAll();
                }
                leftCount++;
                if (leftCount == joinedCount) {
                    GROUPS.remove(id, ReplicaGroup.this);
                }
            } finally {
                lock.unlock();
            }
            afterLeaving.accept(over);
        }

        /** Runs {@code action} after this replica left, told whether training was over. */
        void afterLeaving(Consumer<Boolean> action) {
            afterLeaving = action;
        }

        /**
         * {@link #cut} and the global steps completed when the cut took hold, in one: a step
         * completed by then is one a replica elsewhere may still be applying; none completes after
         * until the cut is released.
         */
        long cutAt(long checkpointId) {
            lock.lock();
            try {
                cut(checkpointId);
                return published;
            } finally {
                lock.unlock();
            }
        }

        /**
         * Tells {@code watcher}, for this replica, now and on every change: whether a cut holds the
         * group and whether another replica starves.
         */
        void watch(GroupWatcher watcher) {
            lock.lock();
            try {
                watches.add(new Watch(replica, watcher));
                watcher.changed(cutCheckpoint, othersStarve(replica));
            } finally {
                lock.unlock();
            }
        }

        void unwatch(GroupWatcher watcher) {
            watches.removeIf(w -> w.watcher() == watcher);
        }
    }

    private void releaseCutIfTaken() {
        if (cutCheckpoint < 0) {
            return;
        }
        for (Seat seat : seats) {
            if (!seat.cutTaken) {
                return;
            }
        }
        cutCheckpoint = -1;
        tellWatchers();
        tryPublish();
        changed.signalAll();
    }

    private void tellWatchers() {
        for (Watch w : watches) {
            w.watcher().changed(cutCheckpoint, othersStarve(w.replica()));
        }
    }

    private boolean othersStarve(int replica) {
        for (int r = 0; r < size; r++) {
            if (r != replica && seats[r].starving && !seats[r].ended) {
                return true;
            }
        }
        return false;
    }

    /** Completes the step when every replica posted and no cut holds the group. */
    private void tryPublish() {
        if (postedCount < size || cutCheckpoint >= 0) {
            return;
        }
        long total = 0;
        int length = -1;
        int contributors = 0;
        float[] only = null;
        boolean more = false; // a replica without samples this step has more to come
        for (Seat seat : seats) {
            Post p = seat.post;
            total += p.samples();
            if (p.samples() > 0) {
                length = p.gradient().length;
                contributors++;
                only = p.gradient();
            } else {
                more |= p.gradient() != null;
            }
        }
        if (total == 0 && !more) {
            done = true;
            result = null;
        } else if (total == 0) {
            result = NO_SAMPLES;
            published++;
        } else if (contributors == 1) {
            // One device alone (one device in all, or the others out of data): its gradient is
            // the average; no pass over it.
            result = only;
            published++;
        } else {
            // Fixed order of replicas: every run sums the same way.
            float[] average = new float[length];
            for (Seat seat : seats) {
                Post p = seat.post;
                if (p.samples() == 0) {
                    continue;
                }
                float w = (float) ((double) p.samples() / total);
                float[] g = p.gradient();
                for (int i = 0; i < length; i++) {
                    average[i] += w * g[i];
                }
            }
            result = average;
            published++;
        }
        for (Seat seat : seats) {
            seat.post = null;
        }
        postedCount = 0;
        changed.signalAll();
    }

    private void awaitJoined() throws InterruptedException {
        long deadline = System.nanoTime() + joinTimeout.toNanos();
        while (joinedCount < size && aborted == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IllegalStateException(
                        "only "
                                + joinedCount
                                + " of "
                                + size
                                + " trainer replicas joined within "
                                + joinTimeout.toMillis() / 1000.0
                                + " s: a trainer subtask did not start or could not reach replica 0's"
                                + " TaskManager");
            }
            changed.await(left, TimeUnit.NANOSECONDS);
        }
        throwIfAborted();
    }

    private void awaitChange() throws InterruptedException {
        changed.await();
        throwIfAborted();
    }

    private void throwIfAborted() {
        if (aborted != null) {
            throw new IllegalStateException(
                    "replica group " + id + " aborted: " + aborted.getMessage(), aborted);
        }
    }
}
