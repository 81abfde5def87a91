package io.minato.trainer.serve;

import io.minato.data.EpochOrder;
import io.minato.loader.SampleRecipe;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.trainer.Accelerator;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.StepResult;
import io.minato.trainer.serve.RankEndpoint.Connection;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A device whose batches train in a PyTorch process outside the job ({@code --accelerator serve}):
 * rank r of the training script reads device r's batch queue. A "step" hands one batch to the
 * process, once it has asked for one (a credit: it asks for as many as its prefetch depth and one
 * more after each batch it takes), so the step's busy time is the time the process took to ask.
 *
 * <p>Exactly once: the device keeps the set of samples it has served (in the job's checkpoints,
 * like a model), and the process keeps the set it has consumed (in its own checkpoint, {@code
 * state_dict()}). When a process connects it says what it has consumed; the device serves again
 * what it served beyond that (prepared again from the samples' identities: a restarted process that
 * lost them), and drops what the process has beyond what it served (a job restored from an older
 * checkpoint). The samples are dealt to the devices by their position in the run, so a sample
 * always comes back to its own device. Whatever arrives, the process gets batches of exactly {@code
 * B} samples but the last, and every rank the same number of samples: the last {@code E * N mod G}
 * samples of the run are left out.
 *
 * <p>Where the process connects, and how the bytes reach it, is the {@link RankEndpoint}'s.
 */
public final class ServingAccelerator implements Accelerator, RankEndpoint.Admission {
    private static final Logger LOG = LoggerFactory.getLogger(ServingAccelerator.class);

    /** The report's {@code accelerator.kind}. */
    public static final String KIND = "served";

    private static final long WAITING_NOTICE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final int rank;
    private final int ranks;
    private final Factory config;
    private final long usable; // positions of the run this job serves, every rank the same count
    private final Map<Integer, int[]> orders = new HashMap<>();
    private final RankEndpoint endpoint;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();

    /**
     * How long a process that asks for a rank still served waits for the serving connection to be
     * found closed before it is refused: a script restarted at once reconnects before the end of
     * its predecessor's stream has been read here.
     */
    static final long PREDECESSOR_GONE_MILLIS = 3000;

    // Guarded by lock, as are the connection's counters.
    private ServedSet served = new ServedSet();
    private final ServedSet pendingKeys = new ServedSet();
    private ArrayDeque<long[]> replay = new ArrayDeque<>();
    private List<PreparedSample> pending = new ArrayList<>();
    private Connection connection;
    private boolean closed;
    private volatile boolean parked;
    private long dropped;
    private boolean takenAll; // the process said it took the end, and everything before it

    private ServingAccelerator(int rank, int ranks, Factory config) throws IOException {
        this.rank = rank;
        this.ranks = ranks;
        this.config = config;
        long run = config.epochs * config.samplesPerEpoch;
        this.usable = run - run % ranks;
        this.endpoint =
                new RankEndpoint(
                        rank,
                        ranks,
                        config.bindAddress,
                        config.port == 0 ? 0 : config.port + rank,
                        config.token,
                        config.runDir,
                        Map.of("batch", config.batch),
                        this);
        LOG.info("Rank {} of {}: serving batches on {}", rank, ranks, endpoint.address());
    }

    /** The address a training process connects to. */
    public String endpoint() {
        return endpoint.address();
    }

    public int port() {
        return endpoint.port();
    }

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public boolean mayPark() {
        return true;
    }

    @Override
    public boolean parked() {
        return parked;
    }

    @Override
    public StepResult train(Batch batch) throws Exception {
        long start = System.nanoTime();
        lock.lockInterruptibly();
        try {
            awaitCredit();
            long waited = System.nanoTime() - start;
            Set<PreparedSample> fresh = Collections.newSetFromMap(new IdentityHashMap<>());
            for (PreparedSample s : batch.samples()) {
                SampleTask t = s.task();
                // A sample this device does not take never comes here (takes, the writer).
                if (served.contains(t.epoch(), t.index())
                        || pendingKeys.contains(t.epoch(), t.index())) {
                    dropped++;
                    continue;
                }
                pending.add(s);
                pendingKeys.add(t.epoch(), t.index());
                fresh.add(s);
            }
            sendWhatCan(false);
            // The writer recycles this batch's patches once the step returns: keep copies of what
            // waits for the next batch.
            for (int i = 0; i < pending.size(); i++) {
                PreparedSample s = pending.get(i);
                if (fresh.contains(s)) {
                    pending.set(i, s.withPatch(s.patch().copy()));
                }
            }
            return StepResult.noLoss(waited);
        } finally {
            lock.unlock();
        }
    }

    /** The run's last {@code E * N mod G} samples are left out: every rank the same steps. */
    @Override
    public boolean takes(SampleTask task) {
        return (long) task.epoch() * config.samplesPerEpoch + task.index() < usable;
    }

    /**
     * Waits until a process is connected and has asked for a batch (under the lock); parked while
     * no process is connected, when nothing says how long the wait will be.
     */
    private void awaitCredit() throws InterruptedException, IOException {
        long since = System.nanoTime();
        long noticed = since;
        try {
            while (connection == null || connection.credits == 0) {
                if (closed) {
                    throw new InterruptedIOException("rank " + rank + " closed");
                }
                parked = connection == null;
                changed.await(connection == null ? 50 : 1000, TimeUnit.MILLISECONDS);
                if (connection == null && System.nanoTime() - noticed > WAITING_NOTICE_NANOS) {
                    noticed = System.nanoTime();
                    LOG.info(
                            "Rank {}: no training process connected to {} for {} s; its batches wait",
                            rank,
                            endpoint(),
                            TimeUnit.NANOSECONDS.toSeconds(noticed - since));
                }
            }
        } finally {
            parked = false;
        }
    }

    /**
     * Sends batches while the process has credit: replays first, then full batches (under the
     * lock).
     */
    private void sendWhatCan(boolean ending) throws Exception {
        while (connection != null && connection.credits > 0) {
            List<PreparedSample> next = nextBatch(ending);
            if (next == null) {
                return;
            }
            send(next);
        }
    }

    private List<PreparedSample> nextBatch(boolean ending) throws Exception {
        int b = config.batch;
        if (!replay.isEmpty()) {
            List<PreparedSample> identities = new ArrayList<>();
            while (identities.size() < b && !replay.isEmpty()) {
                long[] id = replay.pollFirst();
                identities.add(identity((int) id[0], id[1]));
            }
            return materialized(identities);
        }
        if (pending.size() >= b || (ending && !pending.isEmpty())) {
            List<PreparedSample> take =
                    new ArrayList<>(pending.subList(0, Math.min(b, pending.size())));
            pending.subList(0, take.size()).clear();
            for (PreparedSample s : take) {
                pendingKeys.remove(s.task().epoch(), s.task().index());
            }
            return materialized(take);
        }
        return null;
    }

    private PreparedSample identity(int epoch, long index) {
        int[] order =
                orders.computeIfAbsent(
                        epoch,
                        e -> EpochOrder.permutation(config.seed, e, (int) config.samplesPerEpoch));
        SampleTask task = new SampleTask(config.seed, epoch, index, order[(int) index]);
        return new PreparedSample(task, SamplePath.SLOW, 0, null, rank);
    }

    /** Prepares again, from their identities, the samples that come without their patch. */
    private List<PreparedSample> materialized(List<PreparedSample> samples) throws Exception {
        boolean all = samples.stream().allMatch(s -> s.patch() != null);
        if (all) {
            return samples;
        }
        return config.recipe.materialize(new Batch(rank, 0, samples)).samples();
    }

    private void send(List<PreparedSample> samples) {
        Connection c = connection;
        for (PreparedSample s : samples) {
            served.add(s.task().epoch(), s.task().index());
        }
        Map<String, Object> header = new LinkedHashMap<>();
        header.put("type", "batch");
        header.put("step", c.sent);
        List<Object> ids = new ArrayList<>(samples.size());
        for (PreparedSample s : samples) {
            SampleTask t = s.task();
            ids.add(
                    List.of(
                            (long) t.epoch(),
                            t.index(),
                            config.recipe.workload().samples().traceName(t.caseIndex()),
                            s.path().name().toLowerCase(Locale.ROOT)));
        }
        header.put("samples", ids);
        header.putAll(BatchBytes.layout(samples));
        try {
            c.sendBatch(header, samples);
        } catch (IOException e) {
            // Served as far as this device knows; the process says what it has when it returns.
            lost(c, "sending a batch failed: " + e.getMessage());
        }
    }

    /**
     * At the end of the input: serves what is left (a last batch of fewer samples, what a process
     * that returned still lacks), then tells the process, and waits until it has taken everything.
     */
    @Override
    public void finish(Path outputDir, int device) throws Exception {
        lock.lockInterruptibly();
        try {
            long since = System.nanoTime();
            while (true) {
                if (closed) {
                    throw new InterruptedIOException("rank " + rank + " closed");
                }
                sendWhatCan(true);
                Connection c = connection;
                boolean allSent = replay.isEmpty() && pending.isEmpty();
                if (allSent && takenAll) {
                    break;
                }
                if (c != null && allSent && !c.endSent) {
                    try {
                        c.send(Map.of("type", "end", "steps", c.sent));
                        c.endSent = true;
                    } catch (IOException e) {
                        lost(c, "sending the end failed: " + e.getMessage());
                    }
                    continue;
                }
                changed.await(1, TimeUnit.SECONDS);
                if (connection == null && System.nanoTime() - since > WAITING_NOTICE_NANOS) {
                    since = System.nanoTime();
                    LOG.info(
                            "Rank {}: the run is over but its training process has not taken"
                                    + " everything; waiting for it on {}",
                            rank,
                            endpoint());
                }
            }
            LOG.info(
                    "Rank {}: served its last batch; {} samples left out or already served",
                    rank,
                    dropped);
        } finally {
            lock.unlock();
        }
    }

    // ---- the endpoint's calls -------------------------------------------------------------------

    @Override
    public String admit(Connection c, RankEndpoint.Hello hello)
            throws IOException, InterruptedException {
        lock.lockInterruptibly();
        try {
            // A restarted process may come before this side has read its predecessor's end of
            // the stream: give the old connection a moment to be found gone.
            long wait = TimeUnit.MILLISECONDS.toNanos(PREDECESSOR_GONE_MILLIS);
            while (connection != null && !closed && wait > 0) {
                wait = changed.awaitNanos(wait);
            }
            if (connection != null) {
                return "rank "
                        + rank
                        + " is already served to the training process at "
                        + connection.peer
                        + "; one process reads one device queue";
            }
            ServedSet consumed = hello.consumed();
            // What this device served that the process lacks comes again; what the process has
            // that this device does not know (a job restored from an older checkpoint) never does.
            replay = new ArrayDeque<>(served.minus(consumed));
            served.addAll(consumed);
            pending.removeIf(
                    s -> {
                        boolean had = consumed.contains(s.task().epoch(), s.task().index());
                        if (had) {
                            pendingKeys.remove(s.task().epoch(), s.task().index());
                        }
                        return had;
                    });
            Map<String, Object> welcome = new LinkedHashMap<>();
            welcome.put("type", "welcome");
            welcome.put("version", Wire.VERSION);
            welcome.put("rank", rank);
            welcome.put("ranks", ranks);
            welcome.put("batch", config.batch);
            welcome.put("epochs", config.epochs);
            welcome.put("samples", usable / ranks);
            welcome.put("consumed", consumed.size());
            welcome.put("replay", (long) replay.size());
            welcome.put("mode", c.sharedMemory() ? "shm" : "tcp");
            if (c.sharedMemory()) {
                welcome.put("slots", c.slotFiles());
            }
            c.send(welcome);
            connection = c;
            takenAll = false;
            changed.signalAll();
            LOG.info(
                    "Rank {}: training process at {} connected ({}, {} samples consumed, {} to serve"
                            + " again)",
                    rank,
                    c.peer,
                    c.sharedMemory() ? "shared memory" : "TCP",
                    consumed.size(),
                    replay.size());
            return null;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void credit(Connection c, int n) throws IOException {
        lock.lock();
        try {
            if (c.credits + n > c.prefetch) {
                throw new IOException("asked for more batches than its prefetch of " + c.prefetch);
            }
            c.credits += n;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void done(Connection c) throws IOException {
        lock.lock();
        try {
            if (!c.endSent) {
                throw new IOException("said done before the end");
            }
            c.done = true;
            takenAll = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void lost(Connection c, String why) {
        lock.lock();
        try {
            if (connection == c) {
                connection = null;
                if (!c.done) {
                    LOG.warn(
                            "Rank {}: the training process at {} disconnected ({}); what it had"
                                    + " not consumed is served again when it reconnects",
                            rank,
                            c.peer,
                            why);
                }
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
        c.close();
    }

    // ---- state ---------------------------------------------------------------------------------

    @Override
    public byte[] snapshot() throws Exception {
        lock.lockInterruptibly();
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.write(served.toBytes());
            out.writeInt(replay.size());
            for (long[] id : replay) {
                out.writeInt((int) id[0]);
                out.writeLong(id[1]);
            }
            out.writeInt(pending.size());
            for (PreparedSample s : pending) {
                out.writeInt(s.task().epoch());
                out.writeLong(s.task().index());
            }
            out.flush();
            return bytes.toByteArray();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void restore(byte[] state) throws Exception {
        if (state.length == 0) {
            return;
        }
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(state));
        lock.lockInterruptibly();
        try {
            served = ServedSet.readFrom(in);
            replay = new ArrayDeque<>();
            for (int n = in.readInt(); n > 0; n--) {
                replay.add(new long[] {in.readInt(), in.readLong()});
            }
            pending = new ArrayList<>();
            for (int n = in.readInt(); n > 0; n--) {
                PreparedSample s = identity(in.readInt(), in.readLong());
                pending.add(s);
                pendingKeys.add(s.task().epoch(), s.task().index());
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        Connection c;
        lock.lock();
        try {
            closed = true;
            c = connection;
            connection = null;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (c != null) {
            c.close();
        }
        endpoint.close();
    }

    /**
     * Makes each rank's {@link ServingAccelerator}: device r listens on {@code port + r} ({@code
     * port} 0: any free port), and writes where in {@code runDir/serving/rank-r.json}.
     */
    public record Factory(
            String bindAddress,
            int port,
            String token,
            String runDir,
            SampleRecipe recipe,
            long seed,
            long samplesPerEpoch,
            int epochs,
            int batch)
            implements AcceleratorFactory {
        public Factory {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("serving port must be 0-65535: " + port);
            }
            if (samplesPerEpoch < 1 || epochs < 1 || batch < 1) {
                throw new IllegalArgumentException(
                        "need samples per epoch, epochs and batch >= 1: "
                                + samplesPerEpoch
                                + ", "
                                + epochs
                                + ", "
                                + batch);
            }
        }

        @Override
        public Accelerator create(int device, int devices) throws IOException {
            return new ServingAccelerator(device, devices, this);
        }

        @Override
        public boolean keepsSamplesPerDevice() {
            return true;
        }
    }
}
