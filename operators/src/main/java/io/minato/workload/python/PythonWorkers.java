package io.minato.workload.python;

import io.minato.json.Json;
import io.minato.spi.SampleKey;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
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
 * The Python worker processes of one dataset in this JVM ({@code python3 -m minato_flink.worker}):
 * each prepares one sample at a time, written into a file of its own in shared memory. A sample
 * holds its process from {@link #submit} until the process answers, whoever waits for it: a fast
 * worker that gives up at its deadline leaves the sample running, and the slow worker that takes it
 * over collects the same {@link Ticket}. The pool grows to {@link PythonDataset#processes}
 * processes; beyond that a submit waits for one to answer.
 *
 * <p>One pool per JVM and dataset, like the JVM's {@link io.minato.spi.PatchPool}: the processes
 * are a resource of the TaskManager, shared by every subtask in it, and end with it (a process
 * whose JVM died reads the end of its stdin and exits).
 */
public final class PythonWorkers {
    private static final Logger LOG = LoggerFactory.getLogger(PythonWorkers.class);

    private static final Map<PythonDataset, PythonWorkers> JVM = new ConcurrentHashMap<>();

    /** Sample files are {@code minato-py-<jvm pid>-<n>}: whose they are, for the sweep. */
    static final String FILE_PREFIX = "minato-py-";

    private static final Pattern FILE = Pattern.compile(Pattern.quote(FILE_PREFIX) + "(\\d+)-.*");

    /** The environment variable that names the directory of the minato_flink package, if any. */
    static final String PACKAGE_PATH = "MINATO_PYTHONPATH";

    /** The same as a system property, which wins (tests). */
    static final String PACKAGE_PATH_PROPERTY = "minato.pythonpath";

    private static final long HELLO_TIMEOUT_MILLIS = 120_000;

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
    private boolean closed;

    private PythonWorkers(PythonDataset dataset, Path dir) {
        this.dataset = dataset;
        this.dir = dir;
        this.prefix = FILE_PREFIX + ProcessHandle.current().pid() + "-";
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
     * What a worker says of the dataset before any sample, from a process of its own: its length
     * and description.
     *
     * @throws IllegalArgumentException one line naming the dataset and why it cannot be used
     */
    public static Hello probe(String spec, String python) {
        Worker w = start(spec, python);
        try {
            return w.hello;
        } finally {
            w.stop();
        }
    }

    /** A worker's first answer: the dataset's length and description. */
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
            w = start(dataset.spec(), dataset.python());
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
        w.pool = this;
        return w;
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

    /** Ends every process and deletes the sample files this JVM wrote that are still there. */
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
        try (DirectoryStream<Path> left = Files.newDirectoryStream(dir, prefix + "*")) {
            for (Path f : left) {
                Files.deleteIfExists(f);
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
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("Could not sweep stale sample files in {}: {}", dir, e.toString());
        }
    }

    /** Starts a worker process and reads its hello; one line naming the dataset if it fails. */
    private static Worker start(String spec, String python) {
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
        Worker w = new Worker(p);
        try {
            w.hello = w.hello(spec);
        } catch (RuntimeException e) {
            w.stop();
            throw e;
        }
        w.startReader();
        return w;
    }

    /** One process, its pipes, and the thread that reads its answers. */
    private static final class Worker {
        final Process process;
        final DataOutputStream in;
        final DataInputStream out;
        PythonWorkers pool;
        Hello hello;
        private Ticket current; // guarded by this

        Worker(Process process) {
            this.process = process;
            this.in = new DataOutputStream(new BufferedOutputStream(process.getOutputStream()));
            this.out = new DataInputStream(new BufferedInputStream(process.getInputStream()));
        }

        Hello hello(String spec) {
            // A thread of its own, so that a dataset that hangs while it imports is a bounded wait.
            Object[] answer = new Object[1];
            Thread reader =
                    new Thread(
                            () -> {
                                try {
                                    answer[0] = receive();
                                } catch (IOException e) {
                                    answer[0] = e;
                                }
                            },
                            "python-worker-hello");
            reader.setDaemon(true);
            try {
                write("{\"op\":\"hello\"}");
                reader.start();
                reader.join(HELLO_TIMEOUT_MILLIS);
            } catch (IOException e) {
                throw new IllegalArgumentException(
                        "--dataset " + spec + ": the worker process did not start: " + exit());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the Python worker started");
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

        private String exit() {
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
                    process.pid(),
                    t.index,
                    spec,
                    held / 1000,
                    process.pid());
        }

        void startReader() {
            Thread t = new Thread(this::read, "python-worker-" + process.pid());
            t.setDaemon(true);
            t.start();
        }

        void send(Ticket t) throws IOException {
            synchronized (this) {
                current = t;
            }
            synchronized (t) {
                t.pid = process.pid();
            }
            write(
                    "{\"op\":\"get\",\"seed\":"
                            + t.key.seed()
                            + ",\"epoch\":"
                            + t.key.epoch()
                            + ",\"index\":"
                            + t.index
                            + ",\"file\":\""
                            + t.file
                            + "\"}");
        }

        private void write(String json) throws IOException {
            byte[] body = json.getBytes(StandardCharsets.UTF_8);
            in.writeInt(body.length);
            in.write(body);
            in.flush();
        }

        private Map<String, Object> receive() throws IOException {
            int n = out.readInt();
            if (n < 2 || n > 64 << 20) {
                throw new IOException("a frame of " + n + " bytes");
            }
            byte[] body = new byte[n];
            out.readFully(body);
            Object m = Json.parse(new String(body, StandardCharsets.UTF_8));
            if (!(m instanceof Map<?, ?>)) {
                throw new IOException("a frame that is not a JSON object");
            }
            @SuppressWarnings("unchecked") // Json.parse's objects are string-keyed maps
            Map<String, Object> map = (Map<String, Object>) m;
            return map;
        }

        private void read() {
            String why;
            try {
                while (true) {
                    Map<String, Object> reply = receive();
                    Ticket t;
                    synchronized (this) {
                        t = current;
                        current = null;
                    }
                    if (t == null || reply.containsKey("fatal")) {
                        throw new IOException(
                                "unexpected answer " + reply.getOrDefault("fatal", reply));
                    }
                    t.answer(reply);
                    pool.release(this);
                }
            } catch (EOFException e) {
                why = "ended (" + exit() + ")";
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
                t.fail("Python worker process " + process.pid() + " " + why);
            }
        }

        /** Closes the process's stdin: it exits once it has answered what it is working on. */
        void closeInput() {
            try {
                in.close();
            } catch (IOException ignored) {
                // ending it either way
            }
        }

        void stop() {
            closeInput();
            try {
                if (!process.waitFor(2, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
