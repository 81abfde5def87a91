package io.minato.trainer.serve;

import io.minato.sample.PreparedSample;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the training process of one rank connects: a listening socket, the file in the run
 * directory that names it, the check of each process's hello (protocol, token, rank, prefetch,
 * shared memory), and the connections with their reader threads. Whether a process is admitted, and
 * what it is then sent, is the {@link Admission}'s business.
 *
 * <p>Anyone who reaches the port can connect before any token is checked, so until its hello has
 * passed a connection costs a selector key and at most a hello's bytes: one thread accepts every
 * connection and reads all hellos without blocking on any, closes a connection that has not sent
 * one within {@link #HELLO_DEADLINE_MILLIS}, and refuses a first frame larger than a hello without
 * reading it. A process whose hello passed gets a thread of its own, which answers {@code ready},
 * reads the samples it has consumed (a frame that may be large) and hands both to the admission.
 */
final class RankEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RankEndpoint.class);

    /** The most batches a process may ask for ahead. */
    static final int MAX_PREFETCH = 64;

    /** How long a connection may take to send its whole hello; a process sends it at once. */
    static final long HELLO_DEADLINE_MILLIS = 2_000;

    /** How long a process whose hello passed may take over its consumed samples. */
    private static final int CONSUMED_TIMEOUT_MS = 10_000;

    /**
     * Connections the kernel queues for the handshake thread: a burst that overflows the queue has
     * its SYNs dropped, and the process's own connect is retried only a second later.
     */
    private static final int BACKLOG = 1024;

    /** Connections accepted in a row before the hellos that came meanwhile are read. */
    private static final int ACCEPTS_AT_ONCE = 64;

    /** The pause after accepting failed (out of file descriptors), which would otherwise spin. */
    private static final long ACCEPT_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private static final Path SHARED_MEMORY = Path.of("/dev/shm");

    /** Slot files are {@code minato-<pid>-rank<r>-<uuid>-<k>}: whose they are, for the sweep. */
    static final String SLOT_PREFIX = "minato-";

    private static final Pattern SLOT_FILE =
            Pattern.compile(Pattern.quote(SLOT_PREFIX) + "(\\d+)-rank\\d+-.*");

    /** What a process said in its hello, checked. */
    record Hello(int prefetch, ServedSet consumed) {}

    /** Decides on a checked process and hears from it; called on the endpoint's threads. */
    interface Admission {
        /**
         * Admits the process (and sends it its welcome) or refuses it.
         *
         * @return null when admitted, else the one-line reason it is refused
         */
        String admit(Connection c, Hello hello) throws IOException, InterruptedException;

        /** The process asked for {@code n} more batches. */
        void credit(Connection c, int n) throws IOException;

        /** The process took the end, and everything before it. */
        void done(Connection c) throws IOException;

        /** The connection ended ({@code why}: in a few words). */
        void lost(Connection c, String why);
    }

    private final int rank;
    private final int ranks;
    private final String token; // null: none asked
    private final int maxHello;
    private final ServerSocketChannel server;
    private final Selector selector;
    private final SelectionKey accepting;
    private final Path file; // null: no run directory
    private final Admission admission;
    private final RefusalLog refusals;
    private final Thread handshakes;
    private volatile boolean closed;

    // The handshake thread's own: connections by deadline (each gets the same time from its
    // accept, so arrival order is deadline order), and those whose hello passed this round.
    private final ArrayDeque<Pending> byDeadline = new ArrayDeque<>();
    private final List<Pending> passed = new ArrayList<>();
    private boolean acceptPaused;
    private long acceptAgain;

    /**
     * Listens on {@code bind}:{@code port} (0: any free port) and writes where into {@code
     * runDir/serving/rank-r.json} (null: nowhere).
     */
    RankEndpoint(
            int rank,
            int ranks,
            String bind,
            int port,
            String token,
            String runDir,
            Map<String, Object> published,
            Admission admission)
            throws IOException {
        InetAddress address = InetAddress.getByName(bind);
        if (!address.isLoopbackAddress() && token == null) {
            throw new IllegalArgumentException(
                    "serving on "
                            + bind
                            + " takes a shared token (--serve-token-file): a process without"
                            + " it would be refused anyway");
        }
        this.rank = rank;
        this.ranks = ranks;
        this.token = token;
        this.maxHello = Wire.maxHello(token);
        this.admission = admission;
        this.refusals = new RefusalLog("Rank " + rank, LOG::warn, System::nanoTime);
        this.server = bind(address, port);
        try {
            this.selector = Selector.open();
            server.configureBlocking(false);
            this.accepting = server.register(selector, SelectionKey.OP_ACCEPT);
        } catch (IOException e) {
            server.close();
            throw e;
        }
        sweepStaleSlots();
        this.file =
                runDir == null
                        ? null
                        : Path.of(runDir).resolve("serving").resolve("rank-" + rank + ".json");
        publish(published);
        handshakes = new Thread(this::handshakes, "serving-rank-" + rank);
        handshakes.setDaemon(true);
        handshakes.start();
    }

    /** The address a training process connects to. */
    String address() {
        return host() + ":" + port();
    }

    int port() {
        return server.socket().getLocalPort();
    }

    private String host() {
        InetAddress a = server.socket().getInetAddress();
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
    private static ServerSocketChannel bind(InetAddress address, int port) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            ServerSocketChannel s = ServerSocketChannel.open();
            s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            try {
                s.bind(new InetSocketAddress(address, port), BACKLOG);
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

    /**
     * Deletes the slot files of processes that no longer run: a TaskManager killed with its
     * connections open cannot delete its own.
     */
    static void sweepStaleSlots() {
        if (!Files.isDirectory(SHARED_MEMORY)) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(SHARED_MEMORY)) {
            for (Path f : files) {
                Matcher m = SLOT_FILE.matcher(f.getFileName().toString());
                if (m.matches() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("Could not sweep stale slot files in {}: {}", SHARED_MEMORY, e.toString());
        }
    }

    private void publish(Map<String, Object> published) throws IOException {
        if (file == null) {
            return;
        }
        Files.createDirectories(file.getParent());
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("host", host());
        e.put("port", port());
        e.put("rank", rank);
        e.put("ranks", ranks);
        e.putAll(published);
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(tmp, Wire.encode(e));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    // ---- the handshake thread ------------------------------------------------------------------

    /** Accepts connections and reads their hellos, waiting on none of them. */
    private void handshakes() {
        try {
            while (!closed) {
                long now = System.nanoTime();
                expire(now);
                refusals.flush();
                if (acceptPaused && now - acceptAgain >= 0) {
                    acceptPaused = false;
                    accepting.interestOps(SelectionKey.OP_ACCEPT);
                }
                selector.select(this::ready, millisToWait(now));
                if (!passed.isEmpty()) {
                    handOff();
                }
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.error(
                        "Rank {}: the endpoint stopped taking connections: {}", rank, e.toString());
            }
        } finally {
            try {
                for (SelectionKey k : selector.keys()) {
                    closeQuietly(k.channel());
                }
                selector.close();
            } catch (IOException | ClosedSelectorException ignored) {
                // closing anyway
            }
            closeQuietly(server);
        }
    }

    /** Until the first deadline, the log's next count or accepting again; 0: no limit. */
    private long millisToWait(long now) {
        long wait = refusals.nanosToFlush();
        Pending first = byDeadline.peekFirst();
        if (first != null) {
            wait = Math.min(wait, first.deadline - now);
        }
        if (acceptPaused) {
            wait = Math.min(wait, acceptAgain - now);
        }
        return wait == Long.MAX_VALUE ? 0 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait) + 1);
    }

    private void expire(long now) {
        for (Pending p = byDeadline.peekFirst();
                p != null && now - p.deadline >= 0;
                p = byDeadline.peekFirst()) {
            byDeadline.pollFirst();
            if (!p.done) {
                int got = p.bytesRead();
                p.close(
                        "closed",
                        "no hello within "
                                + HELLO_DEADLINE_MILLIS
                                + " ms"
                                + (got > 0 ? " (" + got + " bytes of one)" : ""));
            }
        }
    }

    private void ready(SelectionKey key) {
        if (key == accepting) {
            acceptSome();
            return;
        }
        Pending p = (Pending) key.attachment();
        try {
            p.read();
        } catch (IOException | RuntimeException e) { // one connection's, never the thread's end
            p.close("closed", e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    private void acceptSome() {
        for (int i = 0; i < ACCEPTS_AT_ONCE; i++) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (IOException e) {
                refusals.log("could not accept a connection (" + e.getMessage() + "); pausing");
                accepting.interestOps(0);
                acceptPaused = true;
                acceptAgain = System.nanoTime() + ACCEPT_PAUSE_NANOS;
                return;
            }
            if (channel == null) {
                return;
            }
            Pending p = new Pending(channel);
            try {
                channel.configureBlocking(false);
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                p.key = channel.register(selector, SelectionKey.OP_READ, p);
                byDeadline.addLast(p);
            } catch (IOException e) {
                p.close("closed", String.valueOf(e.getMessage()));
            }
        }
    }

    /**
     * Starts a thread for each connection whose hello passed this round, once the selector let go
     * of its key (a channel still registered cannot block).
     */
    private void handOff() throws IOException {
        selector.selectNow();
        selector.selectedKeys().clear(); // read again by the next select
        for (Pending p : passed) {
            try {
                p.channel.configureBlocking(true);
            } catch (IOException e) {
                p.close("closed", String.valueOf(e.getMessage()));
                continue;
            }
            Thread t = new Thread(() -> serve(p), "serving-rank-" + rank + "-reader");
            t.setDaemon(true);
            t.start();
        }
        passed.clear();
    }

    /** A connection whose hello is being read; the handshake thread's alone. */
    private final class Pending {
        final SocketChannel channel;
        final String peer;
        final long deadline =
                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(HELLO_DEADLINE_MILLIS);
        final ByteBuffer length = ByteBuffer.allocate(4);
        ByteBuffer body; // allocated once the length is known to be a hello's
        SelectionKey key;
        boolean done;
        Map<String, Object> hello;
        int prefetch;

        Pending(SocketChannel channel) {
            this.channel = channel;
            String p;
            try {
                p = String.valueOf(channel.getRemoteAddress());
            } catch (IOException e) {
                p = "a peer gone at once";
            }
            this.peer = p;
        }

        int bytesRead() {
            return length.position() + (body == null ? 0 : body.position());
        }

        /** Reads what has come, and checks the hello once it is whole. */
        void read() throws IOException {
            if (body == null) {
                if (channel.read(length) < 0) {
                    close("closed", "it closed the connection before a hello");
                    return;
                }
                if (length.hasRemaining()) {
                    return;
                }
                int n = length.getInt(0);
                if (n < 2) {
                    close("closed", "a frame of " + n + " bytes: not a minato-flink client");
                    return;
                }
                if (n > maxHello) {
                    refuse(
                            "a first frame of "
                                    + n
                                    + " bytes, where a hello of protocol "
                                    + Wire.VERSION
                                    + " takes at most "
                                    + maxHello);
                    return;
                }
                body = ByteBuffer.allocate(n);
            }
            if (channel.read(body) < 0) {
                close("closed", "it closed the connection within its hello");
                return;
            }
            if (body.hasRemaining()) {
                return;
            }
            Map<String, Object> h;
            try {
                h = Wire.parse(body.array());
            } catch (IOException e) {
                close("closed", e.getMessage());
                return;
            }
            String problem = check(h);
            if (problem != null) {
                refuse(problem);
                return;
            }
            done = true;
            hello = h;
            key.cancel();
            passed.add(this);
        }

        /** What is wrong with a hello, or null; its prefetch when nothing is. */
        private String check(Map<String, Object> h) {
            try {
                String problem = problemWith(h);
                if (problem == null) {
                    prefetch = (int) Wire.number(h, "prefetch", 2);
                    if (prefetch < 1 || prefetch > MAX_PREFETCH) {
                        problem = "prefetch must be 1-" + MAX_PREFETCH + ", not " + prefetch;
                    }
                }
                return problem;
            } catch (IOException e) {
                return e.getMessage();
            }
        }

        /**
         * Says why if the socket takes the few bytes at once (a process waits for them), then
         * closes.
         */
        void refuse(String reason) {
            try {
                channel.write(Wire.frame(Map.of("type", "refused", "reason", reason)));
            } catch (IOException ignored) {
                // refused either way
            }
            close("refused", reason);
        }

        void close(String what, String why) {
            done = true;
            body = null;
            closeQuietly(channel);
            refusals.log(what + " " + peer + ": " + why);
        }
    }

    private static void closeQuietly(java.nio.channels.Channel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closed either way
        }
    }

    // ---- a process whose hello passed
    // ------------------------------------------------------------

    /**
     * The thread of a process whose hello passed: its consumed samples, its admission, its reads.
     */
    private void serve(Pending p) {
        Socket socket = p.channel.socket();
        Connection c = null;
        String problem;
        try {
            socket.setSoTimeout(CONSUMED_TIMEOUT_MS);
            DataInputStream in =
                    new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            DataOutputStream out =
                    new DataOutputStream(
                            new BufferedOutputStream(socket.getOutputStream(), 1 << 16));
            Wire.send(out, Map.of("type", "ready"));
            out.flush();
            Map<String, Object> m = Wire.receive(in);
            ServedSet consumed = new ServedSet();
            problem = null;
            if (!"consumed".equals(m.get("type"))) {
                problem = "expected the samples it consumed, got " + m.get("type");
            } else if (m.get("consumed") instanceof Map<?, ?> wire) {
                try {
                    consumed = ServedSet.fromWire(wire);
                } catch (IllegalArgumentException e) {
                    problem = "bad consumed samples: " + e.getMessage();
                }
            } else if (m.get("consumed") != null) {
                problem = "bad consumed samples: not a mapping of epoch to bitmap";
            }
            BatchBytes.Slots slots = null;
            if (problem == null && sameHost(p.hello)) {
                slots =
                        new BatchBytes.Slots(
                                SHARED_MEMORY,
                                SLOT_PREFIX
                                        + ProcessHandle.current().pid()
                                        + "-rank"
                                        + rank
                                        + "-"
                                        + UUID.randomUUID(),
                                p.prefetch);
            }
            c = new Connection(socket, in, out, slots, p.peer, p.prefetch);
            socket.setSoTimeout(0); // an admitted process may be silent for as long as it likes
            if (problem == null) {
                problem = admission.admit(c, new Hello(p.prefetch, consumed));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            problem = "interrupted";
        } catch (Exception e) {
            problem = e.getMessage() == null ? e.toString() : e.getMessage();
        }
        if (problem != null) {
            if (c != null) {
                try {
                    c.send(Map.of("type", "refused", "reason", problem));
                } catch (IOException ignored) {
                    // refused either way
                }
                c.close();
            } else {
                closeQuietly(p.channel);
            }
            refusals.log("refused " + p.peer + ": " + problem);
            return;
        }
        read(c);
    }

    private String problemWith(Map<String, Object> hello) throws IOException {
        if (!"hello".equals(hello.get("type"))) {
            return "expected a hello, got " + hello.get("type");
        }
        long version = Wire.number(hello, "version", -1);
        if (version != Wire.VERSION) {
            return "protocol version " + version + ", this job speaks " + Wire.VERSION;
        }
        if (token != null) {
            Object t = hello.get("token");
            byte[] given = t instanceof String s ? s.getBytes(StandardCharsets.UTF_8) : new byte[0];
            if (!MessageDigest.isEqual(given, token.getBytes(StandardCharsets.UTF_8))) {
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
            if (!SHARED_MEMORY.equals(p.getParent()) || Files.size(p) > Wire.MAX_NONCE) {
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
                switch (String.valueOf(m.get("type"))) {
                    case "credit" -> {
                        long n = Wire.number(m, "n", 1);
                        if (n < 1 || n > MAX_PREFETCH) {
                            throw new IOException("asked for " + n + " batches at once");
                        }
                        admission.credit(c, (int) n);
                    }
                    case "done" -> admission.done(c);
                    default -> throw new IOException("unexpected message " + m.get("type"));
                }
            }
        } catch (EOFException e) {
            why = "it closed the connection";
        } catch (ClosedChannelException e) {
            why = "the connection was closed here";
        } catch (SocketException e) {
            why = e.getMessage();
        } catch (IOException e) {
            why = e.getMessage();
            LOG.warn("Rank {}: {} broke the protocol: {}", rank, c.peer, why);
        }
        admission.lost(c, why);
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        try {
            handshakes.join(TimeUnit.SECONDS.toMillis(5)); // the port is free when this returns
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a stale file names a closed port, which the process reports
            }
        }
    }

    /**
     * The endpoint's lines about connections it refused or closed. Whoever reaches the port can
     * open connections by the thousand, so each window logs its first {@link #LINES} in full and
     * counts the rest, logged as one line when the window is over.
     */
    static final class RefusalLog {
        static final int LINES = 5;
        static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

        private final String who;
        private final Consumer<String> out;
        private final LongSupplier clock;
        private long windowStart;
        private int logged;
        private long counted;
        private String last;

        RefusalLog(String who, Consumer<String> out, LongSupplier clock) {
            this.who = who;
            this.out = out;
            this.clock = clock;
            this.windowStart = clock.getAsLong();
        }

        synchronized void log(String line) {
            flush();
            if (logged < LINES) {
                logged++;
                out.accept(who + ": " + line);
            } else {
                counted++;
                last = line;
            }
        }

        /** Logs the count of the lines left out, once their window is over. */
        synchronized void flush() {
            long now = clock.getAsLong();
            if (now - windowStart < WINDOW_NANOS) {
                return;
            }
            if (counted > 0) {
                out.accept(
                        who
                                + ": "
                                + counted
                                + " more connections refused or closed in "
                                + TimeUnit.NANOSECONDS.toSeconds(now - windowStart)
                                + " s, the last: "
                                + last);
            }
            windowStart = now;
            logged = 0;
            counted = 0;
            last = null;
        }

        /** How long until {@link #flush} has a count to log; {@link Long#MAX_VALUE}: none. */
        synchronized long nanosToFlush() {
            return counted == 0
                    ? Long.MAX_VALUE
                    : Math.max(0, windowStart + WINDOW_NANOS - clock.getAsLong());
        }
    }

    /**
     * One training process's connection. Its counters are guarded by whoever admitted it; sends
     * come from one thread at a time.
     */
    static final class Connection {
        final String peer;
        private final Socket socket;
        private final DataInputStream in;
        private final DataOutputStream out;
        private final BatchBytes.Slots slots; // null: bytes go over the socket
        private ByteBuffer buffer;
        final int prefetch;
        int credits;
        long sent;
        boolean done;
        boolean endSent;

        private Connection(
                Socket socket,
                DataInputStream in,
                DataOutputStream out,
                BatchBytes.Slots slots,
                String peer,
                int prefetch) {
            this.socket = socket;
            this.prefetch = prefetch;
            this.in = in;
            this.out = out;
            this.slots = slots;
            this.peer = peer;
        }

        /** Whether batches reach this process through shared memory. */
        boolean sharedMemory() {
            return slots != null;
        }

        /** The slot files, for the welcome; empty over TCP. */
        List<String> slotFiles() {
            List<String> files = new ArrayList<>();
            for (int k = 0; slots != null && k < slots.count(); k++) {
                files.add(slots.file(k).toString());
            }
            return files;
        }

        void send(Map<String, ?> header) throws IOException {
            Wire.send(out, header);
            out.flush();
        }

        /** Sends batch {@link #sent}: its bytes into its slot, or after the header. */
        void sendBatch(Map<String, Object> header, List<PreparedSample> samples)
                throws IOException {
            if (slots != null) {
                int slot = (int) (sent % slots.count());
                slots.write(slot, samples);
                header.put("slot", slot);
                send(header);
            } else {
                Wire.send(out, header);
                int bytes = Math.toIntExact(BatchBytes.bytes(samples));
                if (buffer == null || buffer.capacity() < bytes) {
                    buffer = ByteBuffer.allocate(bytes);
                }
                buffer.clear();
                BatchBytes.put(samples, buffer);
                out.write(buffer.array(), 0, bytes);
                out.flush();
            }
            sent++;
            credits--;
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
}
