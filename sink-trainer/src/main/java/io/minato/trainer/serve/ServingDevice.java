package io.minato.trainer.serve;

import io.minato.data.EpochOrder;
import io.minato.loader.SampleRecipe;
import io.minato.loader.Threads;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.PatchPool;
import io.minato.trainer.DeviceAccount;
import io.minato.trainer.DeviceFactory;
import io.minato.trainer.DeviceQueue;
import io.minato.trainer.DeviceWriter;
import io.minato.trainer.QueueAdmission;
import io.minato.trainer.StepResult;
import io.minato.trainer.TrainerWriterState;
import io.minato.trainer.gpu.FlinkGpus;
import io.minato.trainer.serve.RankEndpoint.Connection;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A device whose batches train in a PyTorch process outside the job ({@code --accelerator serve}):
 * rank r of the training script reads device r's batch queue. Not a training step: a thread of its
 * own hands the queue's head to the process once it has asked for a batch (a credit: it asks for as
 * many as its prefetch depth and one more after each batch it takes). Each hand-off counts as a
 * step whose busy time is how long the process took to ask.
 *
 * <p>Exactly once: the device keeps the set of samples it has served (in the job's checkpoints),
 * and the process keeps the set it has consumed (in its own checkpoint, {@code state_dict()}). When
 * a process connects it says what it has consumed; the device serves again what it served beyond
 * that (prepared again from the samples' identities: a restarted process that lost them), and drops
 * what the process has beyond what it served (a job restored from an older checkpoint). The samples
 * are dealt to the devices by their position in the run, so a sample always comes back to its own
 * device. Whatever arrives, the process gets batches of exactly {@code B} samples but the last, and
 * every rank the same number of samples: the last {@code E * N mod G} samples of the run are left
 * out.
 *
 * <p>A checkpoint never waits for the process: the queue, the samples waiting for a full batch and
 * the served set change only under the device's lock, in one hand-off, so any moment is a
 * consistent cut. Where the process connects, and how the bytes reach it, is the {@link
 * RankEndpoint}'s.
 */
public final class ServingDevice
        implements DeviceWriter, QueueAdmission.Consumer, RankEndpoint.Admission {
    private static final Logger LOG = LoggerFactory.getLogger(ServingDevice.class);

    /** The report's {@code accelerator.kind}. */
    public static final String KIND = "served";

    private static final long WAITING_NOTICE_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long CLOSE_JOIN_MILLIS = 10_000;

    /**
     * How long a process that asks for a rank still served waits for the serving connection to be
     * found closed before it is refused: a script restarted at once reconnects before the end of
     * its predecessor's stream has been read here.
     */
    static final long PREDECESSOR_GONE_MILLIS = 3000;

    private final int rank;
    private final int ranks;
    private final Factory config;
    private final long usable; // positions of the run this job serves, every rank the same count
    private final Map<Integer, int[]> orders = new HashMap<>();
    private final DeviceAccount account;
    private final DeviceQueue queue;
    private final ReentrantLock lock; // the queue's: the device's one monitor
    private final RankEndpoint endpoint;
    private final Thread server;

    // Guarded by lock, as are the connection's counters.
    private ServedSet served = new ServedSet();
    private final ServedSet pendingKeys = new ServedSet();
    private ArrayDeque<long[]> replay = new ArrayDeque<>();
    private List<PreparedSample> pending = new ArrayList<>();
    private Connection connection;
    private boolean closing;
    private boolean inputEnded;
    private long dropped;
    private boolean takenAll; // the process said it took the end, and everything before it

    private ServingDevice(DeviceAccount.Context context, Factory config) throws IOException {
        this.rank = context.device();
        this.ranks = context.devices();
        this.config = config;
        long run = config.epochs * config.samplesPerEpoch;
        this.usable = run - run % ranks;
        DeviceAccount.checkRestoredDevice(context);
        if (context.restored() != null) {
            restore(context.restored().consumerState());
        }
        this.account = new DeviceAccount(context, this, () -> KIND);
        this.queue = account.queue();
        this.lock = queue.lock();
        try {
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
        } catch (IOException | RuntimeException e) {
            account.close();
            throw e;
        }
        LOG.info("Rank {} of {}: serving batches on {}", rank, ranks, endpoint.address());
        server = new Thread(this::serve, "server-device-" + rank);
        server.setDaemon(true);
        server.start();
    }

    /** The address a training process connects to. */
    public String endpoint() {
        return endpoint.address();
    }

    public int port() {
        return endpoint.port();
    }

    @Override
    public DeviceAccount account() {
        return account;
    }

    // ---- what the queue's admission asks (under the lock) ---------------------------------------

    @Override
    public boolean ready() {
        return true;
    }

    /** No process is connected: nothing says how long the queue's head will wait. */
    @Override
    public boolean stalled() {
        return connection == null && !queue.isEmpty();
    }

    @Override
    public boolean polled() {
        return true; // connections come and go on the endpoint's threads
    }

    /** The run's last {@code E * N mod G} samples are left out: every rank the same steps. */
    private boolean takes(SampleTask task) {
        return (long) task.epoch() * config.samplesPerEpoch + task.index() < usable;
    }

    // ---- the server's thread --------------------------------------------------------------------

    /**
     * Hands the queue's head to the process, batch after batch: prepared again where it came as
     * identities, then, once the process has credit, into the samples waiting to be sent, in one
     * step under the lock; a checkpoint taken before that holds it in the queue, one taken after in
     * the pending samples.
     */
    private void serve() {
        long step = -1;
        try {
            while (true) {
                Batch head;
                lock.lock();
                try {
                    while (!closing && queue.isEmpty()) {
                        queue.awaitChange(Long.MAX_VALUE);
                    }
                    if (closing) {
                        return;
                    }
                    head = queue.head();
                    step = account.counters().steps();
                } finally {
                    lock.unlock();
                }
                // Preparing a sample again is the loader's work, not the process's: before the
                // step's clock starts, and only for the samples this rank takes.
                Batch full = account.materialized(head, this::takes);
                long startMillis = System.currentTimeMillis();
                long start = System.nanoTime();
                lock.lockInterruptibly();
                try {
                    if (!awaitCredit()) {
                        return;
                    }
                    long end = System.nanoTime();
                    handOff(full);
                    account.stepped(
                            full,
                            step,
                            StepResult.noLoss(end - start),
                            start,
                            end,
                            startMillis,
                            System.currentTimeMillis());
                    queue.removeHead();
                    sendWhatCan(inputEnded && queue.isEmpty());
                } finally {
                    lock.unlock();
                }
            }
        } catch (Throwable t) {
            lock.lock();
            try {
                if (!closing) {
                    queue.fail(
                            new IOException(
                                    "rank " + rank + ": serving step " + step + " failed: " + t,
                                    t));
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Waits until a process is connected and has asked for a batch (under the lock).
     *
     * @return false when the device closes meanwhile
     */
    private boolean awaitCredit() throws InterruptedException {
        long since = System.nanoTime();
        long noticed = since;
        while (connection == null || connection.credits == 0) {
            if (closing) {
                return false;
            }
            queue.awaitChange(connection == null ? 50 : 1000);
            if (connection == null && System.nanoTime() - noticed > WAITING_NOTICE_NANOS) {
                noticed = System.nanoTime();
                LOG.info(
                        "Rank {}: no training process connected to {} for {} s; its batches wait",
                        rank,
                        endpoint(),
                        TimeUnit.NANOSECONDS.toSeconds(noticed - since));
            }
        }
        return true;
    }

    /** The batch's samples join those waiting to be sent, but those served already (under lock). */
    private void handOff(Batch batch) {
        for (PreparedSample s : batch.samples()) {
            SampleTask t = s.task();
            if (served.contains(t.epoch(), t.index())
                    || pendingKeys.contains(t.epoch(), t.index())) {
                dropped++;
                giveBack(s);
                continue;
            }
            pending.add(s);
            pendingKeys.add(t.epoch(), t.index());
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
        // The bytes are in the slot or the socket: the next samples may reuse the arrays.
        samples.forEach(ServingDevice::giveBack);
    }

    private static void giveBack(PreparedSample s) {
        if (s.patch() != null) {
            PatchPool.jvm().give(s.patch());
        }
    }

    /**
     * At the end of the input: once the server has handed off every queued batch, serves what is
     * left (a last batch of fewer samples, what a process that returned still lacks), then tells
     * the process, waits until it has taken everything, and writes the summary.
     */
    @Override
    public void endInput(BooleanSupplier mail) throws IOException, InterruptedException {
        lock.lockInterruptibly();
        try {
            inputEnded = true;
            long since = System.nanoTime();
            while (true) {
                queue.throwIfFailed();
                if (closing) {
                    throw new InterruptedIOException("rank " + rank + " closed");
                }
                Connection c = connection;
                boolean allSent = queue.isEmpty() && replay.isEmpty() && pending.isEmpty();
                if (allSent && takenAll) {
                    break;
                }
                if (queue.isEmpty()) {
                    sendLeft(c);
                }
                if (mail == null) {
                    queue.awaitChange(1000);
                } else {
                    queue.awaitChange(mail); // a checkpoint does not wait for the process
                }
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
        } catch (IOException | InterruptedException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException("rank " + rank + ": serving the last batches failed: " + e, e);
        } finally {
            lock.unlock();
        }
        account.finish();
    }

    /** Sends what the queue left, then the end, to {@code c} (null: none connected; under lock). */
    private void sendLeft(Connection c) throws Exception {
        sendWhatCan(true);
        if (c != null && connection == c && replay.isEmpty() && pending.isEmpty() && !c.endSent) {
            try {
                c.send(Map.of("type", "end", "steps", c.sent));
                c.endSent = true;
            } catch (IOException e) {
                lost(c, "sending the end failed: " + e.getMessage());
            }
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
            long deadline =
                    System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PREDECESSOR_GONE_MILLIS);
            long left;
            while (connection != null && !closing && (left = deadline - System.nanoTime()) > 0) {
                queue.awaitChange(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
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
            queue.signal();
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
            queue.signal();
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
            queue.signal();
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
                queue.signal();
            }
        } finally {
            lock.unlock();
        }
        c.close();
    }

    // ---- state ----------------------------------------------------------------------------------

    /**
     * The queue, the served set and the samples waiting to be sent, now: never waits for a step.
     */
    @Override
    public List<TrainerWriterState> snapshotState(long checkpointId) throws IOException {
        try {
            lock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted before checkpoint " + checkpointId);
        }
        try {
            queue.throwIfFailed();
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
            return List.of(account.state(bytes.toByteArray()));
        } finally {
            lock.unlock();
        }
    }

    /** Restores what {@link #snapshotState} wrote (in the constructor, before any thread runs). */
    private void restore(byte[] state) throws IOException {
        if (state.length == 0) {
            return;
        }
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(state));
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
    }

    /** Stops serving: the connection, the server's thread, the endpoint; writes the summary. */
    @Override
    public void close() throws IOException {
        Connection c;
        lock.lock();
        try {
            closing = true;
            c = connection;
            connection = null;
            queue.signal();
        } finally {
            lock.unlock();
        }
        if (c != null) {
            c.close();
        }
        endpoint.close();
        server.interrupt();
        if (!Threads.awaitEnd(server, CLOSE_JOIN_MILLIS)) {
            LOG.warn(
                    "Rank {}: the server's thread did not stop within {} ms",
                    rank,
                    CLOSE_JOIN_MILLIS);
        }
        try {
            account.close();
        } finally {
            account.endRunIfLast();
        }
    }

    /**
     * Makes each rank's {@link ServingDevice}: device r listens on {@code port + r} ({@code port}
     * 0: any free port), and writes where in {@code runDir/serving/rank-r.json}.
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
            implements DeviceFactory {
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
        public DeviceWriter create(DeviceAccount.Context context, FlinkGpus gpus, int threads)
                throws IOException {
            return new ServingDevice(context, this);
        }

        @Override
        public boolean keepsSamplesPerDevice() {
            return true;
        }
    }
}
