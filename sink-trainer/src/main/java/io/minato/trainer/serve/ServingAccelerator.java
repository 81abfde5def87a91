package io.minato.trainer.serve;

import io.minato.data.EpochOrder;
import io.minato.loader.SampleRecipe;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.trainer.Accelerator;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.StepResult;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
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
 * <p>Bytes cross once: into a slot file in shared memory on the same host (the process maps it and
 * copies the batch into its own tensors), or over the socket to another host. The device listens on
 * loopback unless told otherwise; another host needs the shared token.
 */
public final class ServingAccelerator implements Accelerator {
    private static final Logger LOG = LoggerFactory.getLogger(ServingAccelerator.class);

    /** The report's {@code accelerator.kind}. */
    public static final String KIND = "served";

    /** The most batches a process may ask for ahead. */
    static final int MAX_PREFETCH = 64;

    private static final int HANDSHAKE_TIMEOUT_MS = 10_000;
    private static final long WAITING_NOTICE_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final Path SHARED_MEMORY = Path.of("/dev/shm");

    private final int rank;
    private final int ranks;
    private final Factory config;
    private final long usable; // positions of the run this job serves, every rank the same count
    private final ServerSocket server;
    private final Path endpointFile; // null: no run dir
    private final Thread acceptor;
    private final Map<Integer, int[]> orders = new HashMap<>();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Guarded by lock.
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
        InetAddress bind = InetAddress.getByName(config.bindAddress);
        if (!bind.isLoopbackAddress() && config.token == null) {
            throw new IllegalArgumentException(
                    "serving on "
                            + config.bindAddress
                            + " takes a shared token (--serve-token-file): a process without"
                            + " it would be refused anyway");
        }
        this.server = bind(bind, config.port == 0 ? 0 : config.port + rank);
        this.endpointFile =
                config.runDir == null
                        ? null
                        : Path.of(config.runDir)
                                .resolve("serving")
                                .resolve("rank-" + rank + ".json");
        publishEndpoint();
        acceptor = new Thread(this::accept, "serving-rank-" + rank);
        acceptor.setDaemon(true);
        acceptor.start();
        LOG.info("Rank {} of {}: serving batches on {}", rank, ranks, endpoint());
    }

    /** The address a training process connects to. */
    public String endpoint() {
        return host() + ":" + server.getLocalPort();
    }

    public int port() {
        return server.getLocalPort();
    }

    private String host() {
        InetAddress a = server.getInetAddress();
        if (a.isAnyLocalAddress()) {
            try {
                return InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                return "localhost";
            }
        }
        return a.getHostAddress();
    }

    /** A restarted job binds the same port again; its old socket may still be closing. */
    private static ServerSocket bind(InetAddress address, int port) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            ServerSocket s = new ServerSocket();
            s.setReuseAddress(true);
            try {
                s.bind(new InetSocketAddress(address, port));
                return s;
            } catch (IOException e) {
                s.close();
                if (port == 0 || System.nanoTime() > deadline) {
                    throw new IOException(
                            "cannot serve on "
                                    + address.getHostAddress()
                                    + ":"
                                    + port
                                    + ": "
                                    + e.getMessage(),
                            e);
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while binding port " + port);
                }
            }
        }
    }

    private void publishEndpoint() throws IOException {
        if (endpointFile == null) {
            return;
        }
        Files.createDirectories(endpointFile.getParent());
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("host", host());
        e.put("port", server.getLocalPort());
        e.put("rank", rank);
        e.put("ranks", ranks);
        e.put("batch", config.batch);
        Path tmp = endpointFile.resolveSibling(endpointFile.getFileName() + ".tmp");
        Files.write(tmp, Wire.encode(e));
        Files.move(
                tmp,
                endpointFile,
                StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
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
            Set<PreparedSample> fresh =
                    java.util.Collections.newSetFromMap(new IdentityHashMap<>());
            for (PreparedSample s : batch.samples()) {
                SampleTask t = s.task();
                if (!usable(t)
                        || served.contains(t.epoch(), t.index())
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
                    Patch p = s.patch();
                    pending.set(
                            i,
                            s.withPatch(
                                    new Patch(p.shape(), p.image().clone(), p.label().clone())));
                }
            }
            return StepResult.noLoss(waited);
        } finally {
            lock.unlock();
        }
    }

    private boolean usable(SampleTask t) {
        return (long) t.epoch() * config.samplesPerEpoch + t.index() < usable;
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

    private void send(List<PreparedSample> samples) throws IOException {
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
                            s.path().name().toLowerCase(java.util.Locale.ROOT)));
        }
        header.put("samples", ids);
        header.putAll(BatchBytes.layout(samples));
        try {
            if (c.slots != null) {
                int slot = (int) (c.sent % c.slots.count());
                c.slots.write(slot, samples);
                header.put("slot", slot);
                Wire.send(c.out, header);
            } else {
                Wire.send(c.out, header);
                int bytes = Math.toIntExact(BatchBytes.bytes(samples));
                if (c.buffer == null || c.buffer.capacity() < bytes) {
                    c.buffer = ByteBuffer.allocate(bytes);
                }
                c.buffer.clear();
                BatchBytes.put(samples, c.buffer);
                c.out.write(c.buffer.array(), 0, bytes);
            }
            c.out.flush();
            c.sent++;
            c.credits--;
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
                    Map<String, Object> end = new LinkedHashMap<>();
                    end.put("type", "end");
                    end.put("steps", c.sent);
                    try {
                        Wire.send(c.out, end);
                        c.out.flush();
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

    private void lost(Connection c, String why) {
        if (connection == c) {
            connection = null;
            if (!c.done) {
                LOG.warn(
                        "Rank {}: the training process at {} disconnected ({}); what it had not"
                                + " consumed is served again when it reconnects",
                        rank,
                        c.peer,
                        why);
            }
            changed.signalAll();
        }
        c.close();
    }

    private void accept() {
        while (!server.isClosed()) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                if (!server.isClosed()) {
                    LOG.warn("Rank {}: accepting a connection failed: {}", rank, e.toString());
                }
                continue;
            }
            try {
                handshake(socket);
            } catch (Exception e) {
                LOG.warn(
                        "Rank {}: refused {}: {}",
                        rank,
                        socket.getRemoteSocketAddress(),
                        e.getMessage());
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // refused either way
                }
            }
        }
    }

    private void handshake(Socket socket) throws Exception {
        socket.setSoTimeout(HANDSHAKE_TIMEOUT_MS);
        socket.setTcpNoDelay(true);
        DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        DataOutputStream out =
                new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 1 << 16));
        String peer = String.valueOf(socket.getRemoteSocketAddress());
        Map<String, Object> hello = Wire.receive(in);
        String problem = problemWith(hello);
        ServedSet given = new ServedSet();
        if (problem == null) {
            try {
                Object c = hello.get("consumed");
                given = c == null ? new ServedSet() : ServedSet.fromWire((Map<?, ?>) c);
            } catch (ClassCastException | IllegalArgumentException e) {
                problem = "bad consumed samples: " + e.getMessage();
            }
        }
        ServedSet consumed = given;
        int prefetch = problem == null ? (int) Wire.number(hello, "prefetch", 2) : 0;
        if (problem == null && (prefetch < 1 || prefetch > MAX_PREFETCH)) {
            problem = "prefetch must be 1-" + MAX_PREFETCH + ", not " + prefetch;
        }
        BatchBytes.Slots slots = null;
        if (problem == null && sameHost(hello)) {
            slots =
                    new BatchBytes.Slots(
                            SHARED_MEMORY,
                            "minato-rank" + rank + "-" + UUID.randomUUID(),
                            prefetch);
        }
        lock.lockInterruptibly();
        try {
            if (problem == null && connection != null) {
                problem =
                        "rank "
                                + rank
                                + " is already served to the training process at "
                                + connection.peer
                                + "; one process reads one device queue";
            }
            if (problem != null) {
                if (slots != null) {
                    slots.close();
                }
                Wire.send(out, Map.of("type", "refused", "reason", problem));
                out.flush();
                socket.close();
                LOG.warn("Rank {}: refused {}: {}", rank, peer, problem);
                return;
            }
            Connection c = new Connection(socket, in, out, slots, peer);
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
            welcome.put("samples", usable / ranks);
            welcome.put("consumed", consumed.size());
            welcome.put("replay", (long) replay.size());
            welcome.put("mode", slots != null ? "shm" : "tcp");
            if (slots != null) {
                List<String> files = new ArrayList<>();
                for (int k = 0; k < slots.count(); k++) {
                    files.add(slots.file(k).toString());
                }
                welcome.put("slots", files);
            }
            Wire.send(out, welcome);
            out.flush();
            socket.setSoTimeout(0);
            connection = c;
            takenAll = false;
            changed.signalAll();
            LOG.info(
                    "Rank {}: training process at {} connected ({}, {} samples consumed, {} to serve again)",
                    rank,
                    peer,
                    slots != null ? "shared memory" : "TCP",
                    consumed.size(),
                    replay.size());
            Thread reader = new Thread(() -> read(c), "serving-rank-" + rank + "-reader");
            reader.setDaemon(true);
            reader.start();
        } finally {
            lock.unlock();
        }
    }

    private String problemWith(Map<String, Object> hello) throws IOException {
        if (!"hello".equals(hello.get("type"))) {
            return "expected a hello, got " + hello.get("type");
        }
        long version = Wire.number(hello, "version", -1);
        if (version != Wire.VERSION) {
            return "protocol version " + version + ", this job speaks " + Wire.VERSION;
        }
        if (config.token != null) {
            Object t = hello.get("token");
            byte[] given = t instanceof String s ? s.getBytes(StandardCharsets.UTF_8) : new byte[0];
            if (!MessageDigest.isEqual(given, config.token.getBytes(StandardCharsets.UTF_8))) {
                return "wrong or missing token";
            }
        }
        long r = Wire.number(hello, "rank", -1);
        if (r != rank) {
            return "this endpoint serves rank " + rank + " of " + ranks + ", not rank " + r;
        }
        return null;
    }

    /** Whether the process shares this host's shared memory: it wrote a nonce there for us. */
    private static boolean sameHost(Map<String, Object> hello) {
        if (!(hello.get("shm_probe") instanceof Map<?, ?> probe)
                || !(probe.get("path") instanceof String path)
                || !(probe.get("nonce") instanceof String nonce)) {
            return false;
        }
        try {
            Path p = Path.of(path).normalize();
            if (!p.getParent().equals(SHARED_MEMORY) || Files.size(p) > 256) {
                return false;
            }
            return new String(Files.readAllBytes(p), StandardCharsets.UTF_8).equals(nonce);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private void read(Connection c) {
        String why = "closed";
        try {
            while (true) {
                Map<String, Object> m = Wire.receive(c.in);
                lock.lock();
                try {
                    switch (String.valueOf(m.get("type"))) {
                        case "credit" -> {
                            long n = Wire.number(m, "n", 1);
                            if (n < 1
                                    || c.credits + n
                                            > (c.slots != null ? c.slots.count() : MAX_PREFETCH)) {
                                throw new IOException(
                                        "asked for " + n + " more batches, beyond its prefetch");
                            }
                            c.credits += (int) n;
                        }
                        case "done" -> {
                            if (!c.endSent) {
                                throw new IOException("said done before the end");
                            }
                            c.done = true;
                            takenAll = true;
                        }
                        default -> throw new IOException("unexpected message " + m.get("type"));
                    }
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        } catch (EOFException e) {
            why = "it closed the connection";
        } catch (SocketException e) {
            why = e.getMessage();
        } catch (IOException e) {
            why = e.getMessage();
            LOG.warn("Rank {}: {} broke the protocol: {}", rank, c.peer, why);
        }
        lock.lock();
        try {
            lost(c, why);
        } finally {
            lock.unlock();
        }
    }

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
        lock.lock();
        try {
            closed = true;
            if (connection != null) {
                Connection c = connection;
                connection = null;
                c.close();
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        if (endpointFile != null) {
            try {
                Files.deleteIfExists(endpointFile);
            } catch (IOException ignored) {
                // a stale endpoint refuses connections, which the client reports
            }
        }
    }

    /** One training process's connection; its fields are guarded by the accelerator's lock. */
    private static final class Connection {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;
        final BatchBytes.Slots slots; // null: bytes go over the socket
        final String peer;
        int credits;
        long sent;
        boolean done;
        boolean endSent;
        ByteBuffer buffer;

        Connection(
                Socket socket,
                DataInputStream in,
                DataOutputStream out,
                BatchBytes.Slots slots,
                String peer) {
            this.socket = socket;
            this.in = in;
            this.out = out;
            this.slots = slots;
            this.peer = peer;
        }

        void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closed either way
            }
            if (slots != null) {
                slots.close();
            }
        }
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
