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
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the training process of one rank connects: a listening socket, the file in the run
 * directory that names it, the check of each process's hello (protocol, token, rank, prefetch,
 * shared memory), and the connections with their reader threads. Whether a process is admitted, and
 * what it is then sent, is the {@link Admission}'s business.
 */
final class RankEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RankEndpoint.class);

    /** The most batches a process may ask for ahead. */
    static final int MAX_PREFETCH = 64;

    private static final int HANDSHAKE_TIMEOUT_MS = 10_000;
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
    private final ServerSocket server;
    private final Path file; // null: no run directory
    private final Admission admission;
    private final Thread acceptor;

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
        this.admission = admission;
        this.server = bind(address, port);
        sweepStaleSlots();
        this.file =
                runDir == null
                        ? null
                        : Path.of(runDir).resolve("serving").resolve("rank-" + rank + ".json");
        publish(published);
        acceptor = new Thread(this::accept, "serving-rank-" + rank);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** The address a training process connects to. */
    String address() {
        return host() + ":" + server.getLocalPort();
    }

    int port() {
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
        e.put("port", server.getLocalPort());
        e.put("rank", rank);
        e.put("ranks", ranks);
        e.putAll(published);
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(tmp, Wire.encode(e));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
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
        ServedSet consumed = new ServedSet();
        int prefetch = 0;
        if (problem == null) {
            try {
                Object c = hello.get("consumed");
                consumed = c == null ? new ServedSet() : ServedSet.fromWire((Map<?, ?>) c);
                prefetch = (int) Wire.number(hello, "prefetch", 2);
                if (prefetch < 1 || prefetch > MAX_PREFETCH) {
                    problem = "prefetch must be 1-" + MAX_PREFETCH + ", not " + prefetch;
                }
            } catch (ClassCastException | IllegalArgumentException e) {
                problem = "bad consumed samples: " + e.getMessage();
            }
        }
        BatchBytes.Slots slots = null;
        if (problem == null && sameHost(hello)) {
            slots =
                    new BatchBytes.Slots(
                            SHARED_MEMORY,
                            SLOT_PREFIX
                                    + ProcessHandle.current().pid()
                                    + "-rank"
                                    + rank
                                    + "-"
                                    + UUID.randomUUID(),
                            prefetch);
        }
        Connection c = new Connection(socket, in, out, slots, peer, prefetch);
        if (problem == null) {
            problem = admission.admit(c, new Hello(prefetch, consumed));
        }
        if (problem != null) {
            c.send(Map.of("type", "refused", "reason", problem));
            c.close();
            LOG.warn("Rank {}: refused {}: {}", rank, peer, problem);
            return;
        }
        socket.setSoTimeout(0);
        Thread reader = new Thread(() -> read(c), "serving-rank-" + rank + "-reader");
        reader.setDaemon(true);
        reader.start();
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
            if (!SHARED_MEMORY.equals(p.getParent()) || Files.size(p) > 256) {
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
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
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
