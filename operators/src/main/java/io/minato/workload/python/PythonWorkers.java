package io.minato.workload.python;

import io.minato.json.Json;
import io.minato.spi.SampleKey;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Python worker processes of one dataset in this JVM: each prepares one sample at a time,
 * written into a file of its own in shared memory. A sample holds its process from {@link #submit}
 * until the process answers, whoever waits for it: a fast worker that gives up at its deadline
 * leaves the sample running, and the slow worker that takes it over collects the same {@link
 * Ticket}. The pool grows to {@link PythonDataset#processes} processes; beyond that a submit waits
 * for one to answer.
 *
 * <p>The processes are forked by one fork server ({@code python3 -m minato_flink.worker}), which
 * loads the dataset once: a new worker is ready in milliseconds and shares the server's memory, as
 * DataLoader's forked workers do, where an interpreter started for each worker spent about 0.6 s of
 * CPU importing torch (16 of them 5.4 s on 2 cores, all in the first epoch). A worker connects back
 * to this JVM over a Unix socket in a directory only this user can enter, so that the JVM holds one
 * end of every worker's channel, and a JVM that dies ends its workers (they read the end of their
 * socket and exit); the server says how each of them ended.
 *
 * <p>One pool per JVM and dataset, like the JVM's {@link io.minato.spi.PatchPool}: the processes
 * are a resource of the TaskManager, shared by every subtask in it, and end with it.
 */
public final class PythonWorkers {
    private static final Logger LOG = LoggerFactory.getLogger(PythonWorkers.class);

    private static final Map<PythonDataset, PythonWorkers> JVM = new ConcurrentHashMap<>();

    /**
     * Sample files and socket directories are {@code minato-py-<jvm pid>-<pool>-...}: whose they
     * are, for the sweep.
     */
    static final String FILE_PREFIX = "minato-py-";

    private static final Pattern FILE = Pattern.compile(Pattern.quote(FILE_PREFIX) + "(\\d+)-.*");

    /** The environment variable that names the directory of the minato_flink package, if any. */
    static final String PACKAGE_PATH = "MINATO_PYTHONPATH";

    /** The same as a system property, which wins (tests). */
    static final String PACKAGE_PATH_PROPERTY = "minato.pythonpath";

    private static final long HELLO_TIMEOUT_MILLIS = 120_000;

    /** How long a forked worker may take to connect and say hello. */
    private static final long FORK_TIMEOUT_MILLIS = 30_000;

    /** How long an ended worker's exit status is waited for from the fork server. */
    private static final long EXIT_WAIT_MILLIS = 2_000;

    /**
     * A sample in its process this long is named in a warning, and again at every doubling. A hang
     * is not a failure (a slow read from remote storage ends): the sample is waited for, and the
     * warning says which process to look at. Fixed, not a multiple of the deadline, which adapts
     * per fast worker and means nothing to a slow worker.
     */
    static final long HANG_WARNING_MILLIS = 30_000;

    private final PythonDataset dataset;
    private final Path dir;
    private final String prefix;
    private final AtomicLong files = new AtomicLong();
    private final ArrayDeque<Worker> idle = new ArrayDeque<>();
    private final List<Worker> all = new ArrayList<>();
    private final Object forking = new Object();
    private Server server; // guarded by forking
    private boolean closed;

    private PythonWorkers(PythonDataset dataset, Path dir) {
        this.dataset = dataset;
        this.dir = dir;
        // This JVM's, and this pool's among others of the JVM (another job's, in a session
        // cluster): the names of two pools never meet.
        this.prefix =
                FILE_PREFIX
                        + ProcessHandle.current().pid()
                        + "-"
                        + Long.toHexString(new SecureRandom().nextLong() >>> 16)
                        + "-";
    }

    /** This JVM's pool for {@code dataset}. */
    static PythonWorkers of(PythonDataset dataset) {
        return JVM.computeIfAbsent(
                dataset,
                d -> {
                    PythonWorkers pool = new PythonWorkers(d, sharedMemory());
                    sweepStaleFiles(pool.dir);
                    Thread watch = new Thread(pool::watchForHangs, "python-workers-watch");
                    watch.setDaemon(true);
                    watch.start();
                    Runtime.getRuntime()
                            .addShutdownHook(new Thread(pool::close, "python-workers-close"));
                    return pool;
                });
    }

    /** /dev/shm where there is one; else the temporary folder (a disk, but the same protocol). */
    static Path sharedMemory() {
        Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
    }

    /**
     * What the dataset says of itself before any sample, from a fork server of its own: its length
     * and description.
     *
     * @throws IllegalArgumentException one line naming the dataset and why it cannot be used
     */
    public static Hello probe(String spec, String python) {
        Server s = Server.start(spec, python);
        s.stop();
        return s.hello;
    }

    /** The dataset's length and description, as the fork server loaded it. */
    public record Hello(int size, String description) {}

    /** A sample given to a process: its answer, once there is one. */
    public static final class Ticket {
        final SampleKey key;
        final int index;
        final String file;
        final long since = System.nanoTime();
        private long warnAtMillis = HANG_WARNING_MILLIS; // guarded by the worker
        private Map<String, Object> reply;
        private String died;
        private long pid;

        Ticket(SampleKey key, int index, String file) {
            this.key = key;
            this.index = index;
            this.file = file;
        }

        /**
         * The process's reply, waiting up to {@code nanos}; null if it has not answered yet.
         *
         * @throws WorkerDied the process ended before it answered
         */
        synchronized Map<String, Object> await(long nanos) throws InterruptedException, WorkerDied {
            long deadline = System.nanoTime() + nanos;
            while (reply == null && died == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            if (died != null) {
                throw new WorkerDied(died);
            }
            return reply;
        }

        synchronized void answer(Map<String, Object> r) {
            reply = r;
            notifyAll();
        }

        synchronized void fail(String why) {
            died = why;
            notifyAll();
        }

        /** The process that prepares it. */
        synchronized long pid() {
            return pid;
        }
    }

    /** A worker process ended before it answered: a crash, the OOM killer, a kill. */
    static final class WorkerDied extends Exception {
        private static final long serialVersionUID = 1L;

        WorkerDied(String message) {
            super(message);
        }
    }

    /**
     * Gives sample {@code index} of {@code key} to a process: an idle one, a new one while the pool
     * is below its size, else the first to answer.
     */
    Ticket submit(SampleKey key, int index) throws InterruptedException {
        Ticket t = new Ticket(key, index, dir.resolve(prefix + files.incrementAndGet()).toString());
        while (true) {
            Worker w = take();
            try {
                w.send(t);
                return t;
            } catch (IOException e) {
                w.broken("could not be sent a sample: " + e.getMessage());
            }
        }
    }

    private Worker take() throws InterruptedException {
        synchronized (this) {
            while (true) {
                if (closed) {
                    throw new IllegalStateException(
                            "the Python workers of " + dataset.spec() + " are closed");
                }
                Worker w = idle.pollFirst();
                if (w != null) {
                    return w;
                }
                if (all.size() < dataset.processes()) {
                    break;
                }
                wait();
            }
            all.add(null); // a place held while the process starts, outside the lock
        }
        Worker w;
        try {
            w = fork();
        } catch (RuntimeException e) {
            synchronized (this) {
                all.remove(null);
                notifyAll();
            }
            throw e;
        }
        synchronized (this) {
            all.set(all.indexOf(null), w);
        }
        return w;
    }

    /**
     * A new worker from the fork server, started (or started again, if it ended) on the way; one
     * fork at a time, each a few milliseconds.
     */
    private Worker fork() {
        synchronized (forking) {
            if (server == null || !server.process.isAlive()) {
                if (server != null) {
                    LOG.warn(
                            "The Python fork server of {} ended ({}); starting another",
                            dataset.spec(),
                            server.exit());
                    server.stop();
                }
                server = Server.start(dataset.spec(), dataset.python());
                try {
                    server.listen(dir.resolve(prefix + "sockets-" + files.incrementAndGet()));
                } catch (IOException e) {
                    server.stop();
                    server = null;
                    throw new IllegalStateException(
                            "cannot open a socket for the Python workers in " + dir + ": " + e, e);
                }
            }
            try {
                Worker w = server.fork();
                w.pool = this;
                w.startReader();
                return w;
            } catch (IOException e) {
                throw new IllegalStateException(
                        "the Python fork server of "
                                + dataset.spec()
                                + " could not start a worker: "
                                + e.getMessage(),
                        e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while a Python worker started", e);
            }
        }
    }

    private synchronized void release(Worker w) {
        if (!closed && all.contains(w)) {
            idle.addFirst(w); // the last used is warm
            notifyAll();
        }
    }

    private synchronized void remove(Worker w) {
        all.remove(w);
        idle.remove(w);
        notifyAll();
    }

    /** Warns of each sample that has been in its process past {@link #HANG_WARNING_MILLIS}. */
    private void watchForHangs() {
        while (true) {
            List<Worker> busy;
            synchronized (this) {
                if (closed) {
                    return;
                }
                busy = new ArrayList<>(all);
            }
            for (Worker w : busy) {
                if (w != null) {
                    w.warnIfHanging(dataset.spec());
                }
            }
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Processes this pool holds now. */
    public synchronized int processes() {
        return (int) all.stream().filter(w -> w != null).count();
    }

    /**
     * Ends every process and the fork server, and deletes the sample files and sockets this JVM
     * made that are still there.
     */
    public void close() {
        List<Worker> ending;
        synchronized (this) {
            closed = true;
            ending = new ArrayList<>(all);
            all.clear();
            idle.clear();
            notifyAll();
        }
        // Every process told first, then waited for: a busy one ends after its sample.
        for (Worker w : ending) {
            if (w != null) {
                w.closeInput();
            }
        }
        for (Worker w : ending) {
            if (w != null) {
                w.stop();
            }
        }
        synchronized (forking) {
            if (server != null) {
                server.stop();
                server = null;
            }
        }
        try (DirectoryStream<Path> left = Files.newDirectoryStream(dir, prefix + "*")) {
            for (Path f : left) {
                delete(f);
            }
        } catch (IOException e) {
            LOG.debug("Could not delete the sample files left in {}: {}", dir, e.toString());
        }
    }

    /** Deletes the sample files of JVMs that no longer run: a killed one cannot delete its own. */
    static void sweepStaleFiles(Path dir) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, FILE_PREFIX + "*")) {
            for (Path f : files) {
                Matcher m = FILE.matcher(f.getFileName().toString());
                if (m.matches() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
                    delete(f);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("Could not sweep stale sample files in {}: {}", dir, e.toString());
        }
    }

    /** A sample file, or a socket directory with its sockets. */
    private static void delete(Path f) throws IOException {
        if (Files.isDirectory(f)) {
            try (DirectoryStream<Path> in = Files.newDirectoryStream(f)) {
                for (Path s : in) {
                    Files.deleteIfExists(s);
                }
            }
        }
        Files.deleteIfExists(f);
    }

    /** {@code s} as a JSON string; paths of this JVM's making hold no control characters. */
    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /**
     * A socket's two directions as streams that a reading and a writing thread use at once:
     * Channels' streams would hold the channel's blocking lock through a read, and a request could
     * not be sent while its reader waits.
     */
    private static InputStream inputOf(SocketChannel ch) {
        return new InputStream() {
            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return len == 0 ? 0 : ch.read(ByteBuffer.wrap(b, off, len));
            }
        };
    }

    private static OutputStream outputOf(SocketChannel ch) {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                ByteBuffer buf = ByteBuffer.wrap(b, off, len);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
            }
        };
    }

    /** Frames of a 4-byte length and a JSON object, the protocol of minato_flink.worker. */
    private static void writeFrame(DataOutputStream out, String json) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        out.writeInt(body.length);
        out.write(body);
        out.flush();
    }

    private static Map<String, Object> readFrame(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 2 || n > 64 << 20) {
            throw new IOException("a frame of " + n + " bytes");
        }
        byte[] body = new byte[n];
        in.readFully(body);
        Object m = Json.parse(new String(body, StandardCharsets.UTF_8));
        if (!(m instanceof Map<?, ?>)) {
            throw new IOException("a frame that is not a JSON object");
        }
        @SuppressWarnings("unchecked") // Json.parse's objects are string-keyed maps
        Map<String, Object> map = (Map<String, Object>) m;
        return map;
    }

    /**
     * The fork server: the process that loaded the dataset, its pipes, the socket its workers
     * connect to, and the thread that reads what it says (fork replies, and each worker's end).
     */
    private static final class Server {
        final Process process;
        final DataOutputStream in;
        final DataInputStream out;
        Hello hello;
        private Path socketDir;
        private ServerSocketChannel listener;
        private Map<String, Object> forked; // guarded by this
        private final Map<Long, String> exits = new HashMap<>(); // guarded by this
        private boolean ended; // guarded by this

        private Server(Process process) {
            this.process = process;
            this.in = new DataOutputStream(new BufferedOutputStream(process.getOutputStream()));
            this.out = new DataInputStream(new BufferedInputStream(process.getInputStream()));
        }

        /** Starts a fork server and reads its hello; one line naming the dataset if it fails. */
        static Server start(String spec, String python) {
            ProcessBuilder pb =
                    new ProcessBuilder(python, "-m", "minato_flink.worker", "--dataset", spec)
                            .redirectError(ProcessBuilder.Redirect.INHERIT);
            String pkg = System.getProperty(PACKAGE_PATH_PROPERTY, System.getenv(PACKAGE_PATH));
            if (pkg != null && !pkg.isEmpty()) {
                String path = pb.environment().get("PYTHONPATH");
                pb.environment()
                        .put("PYTHONPATH", path == null || path.isEmpty() ? pkg : pkg + ":" + path);
            }
            Process p;
            try {
                p = pb.start();
            } catch (IOException e) {
                throw new IllegalArgumentException(
                        "--python " + python + ": cannot start it: " + e.getMessage());
            }
            Server s = new Server(p);
            try {
                s.hello = s.hello(spec);
            } catch (RuntimeException e) {
                s.stop();
                throw e;
            }
            Thread t = new Thread(s::read, "python-fork-server-" + p.pid());
            t.setDaemon(true);
            t.start();
            return s;
        }

        private Hello hello(String spec) {
            // A thread of its own, so that a dataset that hangs while it imports is a bounded
            // wait.
            Object[] answer = new Object[1];
            Thread reader =
                    new Thread(
                            () -> {
                                try {
                                    answer[0] = readFrame(out);
                                } catch (IOException e) {
                                    answer[0] = e;
                                }
                            },
                            "python-worker-hello");
            reader.setDaemon(true);
            try {
                writeFrame(in, "{\"op\":\"hello\"}");
                reader.start();
                reader.join(HELLO_TIMEOUT_MILLIS);
            } catch (IOException e) {
                throw new IllegalArgumentException(
                        "--dataset " + spec + ": the worker process did not start: " + exit());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the Python workers started");
            }
            if (reader.isAlive()) {
                throw new IllegalArgumentException(
                        "--dataset "
                                + spec
                                + ": the worker process did not answer in "
                                + HELLO_TIMEOUT_MILLIS / 1000
                                + " s (does the dataset hang while it loads?)");
            }
            if (!(answer[0] instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException(
                        "--dataset "
                                + spec
                                + ": the worker process ended before it loaded the dataset ("
                                + exit()
                                + "; is minato_flink importable by this Python? see its output)");
            }
            if (!Boolean.TRUE.equals(m.get("ok"))) {
                throw new IllegalArgumentException(String.valueOf(m.get("fatal")));
            }
            long size = ((Number) m.get("len")).longValue();
            if (size < 1 || size > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(
                        "--dataset " + spec + ": len() is " + size + ", not 1 to 2^31 - 1");
            }
            return new Hello((int) size, String.valueOf(m.get("describe")));
        }

        /** Opens the socket its workers connect to, in a directory only this user can enter. */
        void listen(Path dir) throws IOException {
            socketDir =
                    Files.createDirectory(
                            dir,
                            PosixFilePermissions.asFileAttribute(
                                    PosixFilePermissions.fromString("rwx------")));
            listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            listener.bind(UnixDomainSocketAddress.of(socketDir.resolve("w")));
            listener.configureBlocking(false);
        }

        /** Forks a worker and takes its connection. */
        Worker fork() throws IOException, InterruptedException {
            Path socket = socketDir.resolve("w");
            writeFrame(in, "{\"op\":\"fork\",\"socket\":" + quote(socket.toString()) + "}");
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FORK_TIMEOUT_MILLIS);
            Map<String, Object> reply;
            synchronized (this) {
                while (forked == null && !ended) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IOException(
                                "no answer to a fork in " + FORK_TIMEOUT_MILLIS / 1000 + " s");
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
                reply = forked;
                forked = null;
            }
            if (reply == null) {
                throw new IOException("it ended (" + exit() + ")");
            }
            if (!Boolean.TRUE.equals(reply.get("ok"))) {
                throw new IOException(String.valueOf(reply.get("error")));
            }
            long pid = ((Number) reply.get("pid")).longValue();
            SocketChannel ch = accept(pid, deadline);
            if (ch == null) {
                String how;
                synchronized (this) {
                    how = exits.remove(pid);
                }
                kill(pid);
                throw new IOException(
                        how != null
                                ? "worker " + pid + " ended before it connected (" + how + ")"
                                : "worker "
                                        + pid
                                        + " did not connect in "
                                        + FORK_TIMEOUT_MILLIS / 1000
                                        + " s");
            }
            ch.configureBlocking(true);
            Worker w = new Worker(this, pid, ch);
            Map<String, Object> hello;
            try {
                hello = readFrame(w.out);
            } catch (IOException e) {
                w.close();
                throw new IOException("worker " + pid + " ended before its hello", e);
            }
            Object said = hello.get("pid");
            if (!(said instanceof Number n) || n.longValue() != pid) {
                // Only this user can reach the socket, and forks are one at a time.
                w.close();
                kill(pid);
                throw new IOException("a connection that is not worker " + pid + ": " + hello);
            }
            return w;
        }

        /** Worker {@code pid}'s connection; null when it ended first or the deadline passed. */
        private SocketChannel accept(long pid, long deadline) throws IOException {
            try (Selector selector = Selector.open()) {
                listener.register(selector, SelectionKey.OP_ACCEPT);
                while (true) {
                    SocketChannel ch = listener.accept();
                    if (ch != null) {
                        return ch;
                    }
                    synchronized (this) {
                        if (exits.containsKey(pid) || ended) {
                            return null;
                        }
                    }
                    long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (left <= 0) {
                        return null;
                    }
                    selector.select(Math.min(left, 100));
                }
            }
        }

        private void read() {
            try {
                while (true) {
                    Map<String, Object> m = readFrame(out);
                    Object op = m.get("op");
                    synchronized (this) {
                        if ("exited".equals(op)) {
                            exits.put(
                                    ((Number) m.get("pid")).longValue(),
                                    String.valueOf(m.get("how")));
                        } else if ("forked".equals(op)) {
                            forked = m;
                        } else {
                            throw new IOException("unexpected answer " + m);
                        }
                        notifyAll();
                    }
                }
            } catch (EOFException e) {
                // the server ended: its workers' ends are no longer reported
            } catch (IOException | RuntimeException e) {
                LOG.warn(
                        "The Python fork server {} broke the protocol: {}",
                        process.pid(),
                        e.getMessage());
            }
            synchronized (this) {
                ended = true;
                notifyAll();
            }
        }

        /** How worker {@code pid} ended, waiting a little for the server to say. */
        String exitOf(long pid) {
            String how;
            try {
                how = endWithin(pid, EXIT_WAIT_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                how = null;
            }
            if (how != null) {
                return how;
            }
            return ProcessHandle.of(pid).map(h -> h.isAlive()).orElse(false)
                    ? "still running"
                    : "exit status unknown";
        }

        /** Whether worker {@code pid} ended, waiting up to {@code millis}; forgets its end. */
        synchronized boolean waitForExit(long pid, long millis) throws InterruptedException {
            boolean done = endWithin(pid, millis) != null || ended;
            exits.remove(pid);
            return done;
        }

        /**
         * How worker {@code pid} ended, as the server said, waiting up to {@code millis}; null when
         * it has not said (or cannot: the server ended). Kept until the worker is stopped.
         */
        private synchronized String endWithin(long pid, long millis) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
            while (!exits.containsKey(pid) && !ended) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return exits.get(pid);
        }

        private static void kill(long pid) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }

        String exit() {
            try {
                if (process.waitFor(2, TimeUnit.SECONDS)) {
                    int code = process.exitValue();
                    // Java gives a process a signal ended as 128 + the signal.
                    return code > 128 ? "killed by signal " + (code - 128) : "exit status " + code;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "still running";
        }

        /** Ends the server (its stdin closed: it exits) and its socket. */
        void stop() {
            try {
                in.close();
            } catch (IOException ignored) {
                // ending it either way
            }
            try {
                if (!process.waitFor(2, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            if (listener != null) {
                try {
                    listener.close();
                    delete(socketDir);
                } catch (IOException e) {
                    LOG.debug("Could not delete {}: {}", socketDir, e.toString());
                }
            }
        }
    }

    /** One forked process, its socket, and the thread that reads its answers. */
    private static final class Worker {
        final Server server;
        final long pid;
        final SocketChannel channel;
        final DataOutputStream in;
        final DataInputStream out;
        PythonWorkers pool;
        private Ticket current; // guarded by this

        Worker(Server server, long pid, SocketChannel channel) {
            this.server = server;
            this.pid = pid;
            this.channel = channel;
            this.in = new DataOutputStream(new BufferedOutputStream(outputOf(channel)));
            this.out = new DataInputStream(new BufferedInputStream(inputOf(channel)));
        }

        /** Names this process and its sample once it held it past the next warning's time. */
        void warnIfHanging(String spec) {
            long held;
            Ticket t;
            synchronized (this) {
                t = current;
                if (t == null) {
                    return;
                }
                held = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t.since);
                if (held < t.warnAtMillis) {
                    return;
                }
                t.warnAtMillis *= 2;
            }
            LOG.warn(
                    "Python worker process {} has run __getitem__({}) of {} for {} s; it is"
                            + " waited for (a hang is not a failure): py-spy dump --pid {} shows"
                            + " where it is",
                    pid,
                    t.index,
                    spec,
                    held / 1000,
                    pid);
        }

        void startReader() {
            Thread t = new Thread(this::read, "python-worker-" + pid);
            t.setDaemon(true);
            t.start();
        }

        void send(Ticket t) throws IOException {
            synchronized (this) {
                current = t;
            }
            synchronized (t) {
                t.pid = pid;
            }
            writeFrame(
                    in,
                    "{\"op\":\"get\",\"seed\":"
                            + t.key.seed()
                            + ",\"epoch\":"
                            + t.key.epoch()
                            + ",\"index\":"
                            + t.index
                            + ",\"file\":"
                            + quote(t.file)
                            + "}");
        }

        private void read() {
            String why;
            try {
                while (true) {
                    Map<String, Object> reply = readFrame(out);
                    Ticket t;
                    synchronized (this) {
                        t = current;
                        current = null;
                    }
                    if (t == null) {
                        throw new IOException("unexpected answer " + reply);
                    }
                    t.answer(reply);
                    pool.release(this);
                }
            } catch (EOFException e) {
                why = "ended (" + server.exitOf(pid) + ")";
            } catch (IOException | RuntimeException e) {
                why = "broke the protocol: " + e.getMessage();
            }
            broken(why);
        }

        /** The process is gone or unusable: out of the pool, its sample failed with {@code why}. */
        void broken(String why) {
            Ticket t;
            synchronized (this) {
                t = current;
                current = null;
            }
            if (pool != null) {
                pool.remove(this);
            }
            stop();
            if (t != null) {
                t.fail("Python worker process " + pid + " " + why);
            }
        }

        /** Ends the process's input: it exits once it has answered what it is working on. */
        void closeInput() {
            try {
                channel.shutdownOutput();
            } catch (IOException ignored) {
                // ending it either way
            }
        }

        void close() {
            try {
                channel.close();
            } catch (IOException ignored) {
                // ending it either way
            }
        }

        void stop() {
            closeInput();
            try {
                if (!server.waitForExit(pid, 2_000)) {
                    Server.kill(pid);
                }
            } catch (InterruptedException e) {
                Server.kill(pid);
                Thread.currentThread().interrupt();
            }
            close();
        }
    }
}
