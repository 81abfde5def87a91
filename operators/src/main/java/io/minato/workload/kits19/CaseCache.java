package io.minato.workload.kits19;

import io.minato.data.BadInputException;
import io.minato.data.FileStamp;
import io.minato.spi.Shape3;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.DataInputStream;
import java.io.DataOutput;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

/**
 * What the loader remembers about a dataset's cases: results that depend on a case's files alone,
 * computed once and reused by every later sample, epoch and run. Two kinds today: the start-up
 * content check ({@link #check}) and the foreground components that RandBalancedCrop's scan finds
 * ({@link #memo}).
 *
 * <p>Every entry is keyed by the identity of the files it was computed from (absolute path, size,
 * modification time, file key): a changed or replaced file is a miss and is computed again. In
 * memory, one store per JVM, shared by every operator and thread, bounded in bytes (least recently
 * used first out). On disk, one small file per case and kind in the cache folder (by default
 * {@value #DEFAULT_DIR_NAME} inside the data folder), written atomically and checksummed. A folder
 * that cannot be written costs speed, never correctness: one line says so and the run goes on from
 * memory; an unreadable or corrupt entry is a miss.
 *
 * <p>This object holds only settings (it ships with the job graph); the stores are static.
 */
public final class CaseCache implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The cache folder's name inside the data folder, unless told otherwise. */
    public static final String DEFAULT_DIR_NAME = ".minato-cache";

    /** The bound on what the in-memory store holds, per JVM. */
    public static final long MEMORY_BYTES = 64L << 20;

    private static final int MAGIC = 0x4D4E4346; // "MNCF"
    private static final int FORMAT = 1;

    /** Null: memory only. */
    private final String dir;

    private final boolean enabled;

    private CaseCache(String dir, boolean enabled) {
        this.dir = dir;
        this.enabled = enabled;
    }

    /** Remembers nothing: every run and sample computes everything (bit-identical results). */
    public static CaseCache disabled() {
        return new CaseCache(null, false);
    }

    /** Remembers in this JVM only. */
    public static CaseCache inMemory() {
        return new CaseCache(null, true);
    }

    /** Remembers in this JVM and in {@code dir}, created on first write. */
    public static CaseCache at(Path dir) {
        return new CaseCache(dir.toAbsolutePath().normalize().toString(), true);
    }

    /** The default: {@value #DEFAULT_DIR_NAME} inside the data folder. */
    public static CaseCache forData(Path dataDir) {
        return at(dataDir.resolve(DEFAULT_DIR_NAME));
    }

    public boolean enabled() {
        return enabled;
    }

    /** The folder entries are kept in, or null when the cache is off or in memory only. */
    public Path dir() {
        return dir == null ? null : Path.of(dir);
    }

    /** Hit and miss counts of one user of the cache (an operator), safe to share by threads. */
    public static final class Counters {
        private final AtomicLong hits = new AtomicLong();
        private final AtomicLong misses = new AtomicLong();

        public long hits() {
            return hits.get();
        }

        public long misses() {
            return misses.get();
        }
    }

    /**
     * {@link CaseCheck#check}, remembered: the header check and the patch size are checked every
     * time, the voxel scan once per version of the files.
     */
    public CaseInfo check(CaseFiles c, Shape3 patch) throws BadInputException {
        if (!enabled) {
            return CaseCheck.check(c, patch);
        }
        Shape3 shape = CaseCheck.checkHeaders(c);
        CaseCheck.checkFitsPatch(c, shape, patch);
        Key key = key(Kind.CHECK, c);
        if (key != null) {
            long[] counts = lookup(Kind.CHECK, key);
            if (counts != null) {
                return new CaseInfo(c, shape, counts[0], counts[1]);
            }
        }
        CaseInfo info = CaseCheck.check(c, null);
        if (key != null) {
            remember(Kind.CHECK, key, new long[] {info.kidneyVoxels(), info.tumourVoxels()});
        }
        return info;
    }

    /**
     * The memo of a case for its preparations: the foreground components, looked up in memory, then
     * on disk, and kept in both once scanned. Each lookup counts as a hit or a miss in {@code
     * counters}.
     */
    public CaseMemo memo(CaseFiles c, Counters counters) {
        Key key = enabled ? key(Kind.COMPONENTS, c) : null;
        if (key == null) {
            return CaseMemo.NONE;
        }
        return new CaseMemo() {
            @Override
            public List<Component> foregroundComponents() {
                List<Component> known = lookup(Kind.COMPONENTS, key);
                (known != null ? counters.hits : counters.misses).incrementAndGet();
                return known;
            }

            @Override
            public void rememberForegroundComponents(List<Component> components) {
                remember(Kind.COMPONENTS, key, List.copyOf(components));
            }
        };
    }

    /** Bytes the in-memory store holds in this JVM (all caches together). */
    public static long memoryBytes() {
        return MEMORY.bytes();
    }

    /** Empties this JVM's in-memory store (tests: a cold start without a new JVM). */
    public static void clearMemory() {
        MEMORY.clear();
    }

    // ---- kinds of entries ----

    private abstract static class Kind<T> {
        static final Kind<long[]> CHECK =
                new Kind<>("check", 1) {
                    @Override
                    void write(long[] counts, DataOutput out) throws IOException {
                        out.writeLong(counts[0]);
                        out.writeLong(counts[1]);
                    }

                    @Override
                    long[] read(DataInput in) throws IOException {
                        return new long[] {in.readLong(), in.readLong()};
                    }
                };

        static final Kind<List<Component>> COMPONENTS =
                new Kind<>("components", 1) {
                    @Override
                    void write(List<Component> components, DataOutput out) throws IOException {
                        out.writeInt(components.size());
                        for (Component c : components) {
                            c.writeTo(out);
                        }
                    }

                    @Override
                    List<Component> read(DataInput in) throws IOException {
                        int n = in.readInt();
                        if (n < 0) {
                            throw new IOException("negative component count " + n);
                        }
                        List<Component> components = new ArrayList<>(Math.min(n, 1 << 16));
                        for (int i = 0; i < n; i++) {
                            components.add(Component.readFrom(in));
                        }
                        return List.copyOf(components);
                    }
                };

        final String name;
        final int version;

        Kind(String name, int version) {
            this.name = name;
            this.version = version;
        }

        abstract void write(T value, DataOutput out) throws IOException;

        abstract T read(DataInput in) throws IOException;

        byte[] encode(T value) {
            var bytes = new ByteArrayOutputStream();
            try (var out = new DataOutputStream(bytes)) {
                write(value, out);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return bytes.toByteArray();
        }
    }

    // ---- keys: the identity of a case's files ----

    private record Key(
            String dir, String kind, String caseName, FileStamp image, FileStamp label) {}

    /** The key of a case's entry, or null when its files cannot be read (the caller will fail). */
    private Key key(Kind<?> kind, CaseFiles c) {
        try {
            return new Key(
                    dir, kind.name, c.name(), FileStamp.of(c.image()), FileStamp.of(c.label()));
        } catch (IOException e) {
            return null;
        }
    }

    // ---- lookups: memory, then disk ----

    private <T> T lookup(Kind<T> kind, Key key) {
        byte[] payload = MEMORY.get(key);
        if (payload == null && dir != null) {
            payload = readEntry(kind, key);
            if (payload != null) {
                MEMORY.put(key, payload);
            }
        }
        if (payload == null) {
            return null;
        }
        try {
            return kind.read(new DataInputStream(new ByteArrayInputStream(payload)));
        } catch (IOException e) {
            return null;
        }
    }

    private <T> void remember(Kind<T> kind, Key key, T value) {
        byte[] payload = kind.encode(value);
        MEMORY.put(key, payload);
        if (dir != null) {
            writeEntry(kind, key, payload);
        }
    }

    private Path entryFile(Kind<?> kind, Key key) {
        return Path.of(dir).resolve(entryName(key.caseName(), kind.name));
    }

    /**
     * The file name of a case's entry: the case's name where it is plain ASCII, else that with
     * every other character replaced and the name's CRC appended. A JVM whose file-name encoding is
     * ASCII (the C locale) cannot make a path of other characters; the entry's stamps tell two
     * cases apart that end up with one name.
     */
    static String entryName(String caseName, String kind) {
        StringBuilder b = new StringBuilder(caseName.length() + 16);
        boolean plain = true;
        for (int i = 0; i < caseName.length(); i++) {
            char c = caseName.charAt(i);
            boolean ok =
                    (c >= 'a' && c <= 'z')
                            || (c >= 'A' && c <= 'Z')
                            || (c >= '0' && c <= '9')
                            || c == '_'
                            || c == '-'
                            || c == '.';
            b.append(ok ? c : '_');
            plain &= ok;
        }
        if (!plain) {
            CRC32 crc = new CRC32();
            crc.update(caseName.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            b.append('-').append(Long.toHexString(crc.getValue()));
        }
        return b.append('.').append(kind).toString();
    }

    private byte[] readEntry(Kind<?> kind, Key key) {
        Path file = entryFile(kind, key);
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            return null; // none yet, or unreadable: a miss
        }
        try (var in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            if (in.readInt() != MAGIC
                    || in.readInt() != FORMAT
                    || !in.readUTF().equals(kind.name)
                    || in.readInt() != kind.version
                    || !FileStamp.readFrom(in).equals(key.image())
                    || !FileStamp.readFrom(in).equals(key.label())) {
                return null;
            }
            int n = in.readInt();
            if (n < 0 || n > bytes.length) {
                return null;
            }
            byte[] payload = new byte[n];
            in.readFully(payload);
            CRC32 crc = new CRC32();
            crc.update(payload);
            return in.readLong() == crc.getValue() ? payload : null;
        } catch (IOException e) {
            return null; // truncated or corrupt: computed again and overwritten
        }
    }

    private void writeEntry(Kind<?> kind, Key key, byte[] payload) {
        Path file = entryFile(kind, key);
        Path tmp = null;
        try {
            Files.createDirectories(file.getParent());
            var bytes = new ByteArrayOutputStream(payload.length + 256);
            try (var out = new DataOutputStream(bytes)) {
                out.writeInt(MAGIC);
                out.writeInt(FORMAT);
                out.writeUTF(kind.name);
                out.writeInt(kind.version);
                key.image().writeTo(out);
                key.label().writeTo(out);
                out.writeInt(payload.length);
                out.write(payload);
                CRC32 crc = new CRC32();
                crc.update(payload);
                out.writeLong(crc.getValue());
            }
            tmp = Files.createTempFile(file.getParent(), file.getFileName().toString(), ".tmp");
            Files.write(tmp, bytes.toByteArray());
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException | RuntimeException e) {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // the failure below is what the user needs to hear about
                }
            }
            warnOnce(e);
        }
    }

    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private void warnOnce(Exception e) {
        if (WARNED.add(dir)) {
            System.err.println(
                    "warning: cannot write the case cache "
                            + dir
                            + " ("
                            + e.getClass().getSimpleName()
                            + ": "
                            + e.getMessage()
                            + "); per-case results are kept in memory only and computed again"
                            + " next run (--cache-dir DIR picks another folder)");
        }
    }

    // ---- the in-memory store ----

    private static final Memory MEMORY = new Memory(MEMORY_BYTES);

    /** Payloads by key, least recently used evicted first beyond the byte bound. */
    private static final class Memory {
        private static final int OVERHEAD = 256;
        private final long bound;
        private final LinkedHashMap<Key, byte[]> entries = new LinkedHashMap<>(64, 0.75f, true);
        private long bytes;

        Memory(long bound) {
            this.bound = bound;
        }

        synchronized byte[] get(Key key) {
            return entries.get(key);
        }

        synchronized void put(Key key, byte[] payload) {
            byte[] old = entries.put(Objects.requireNonNull(key), payload);
            if (old != null) {
                bytes -= old.length + OVERHEAD;
            }
            bytes += payload.length + OVERHEAD;
            var it = entries.entrySet().iterator();
            while (bytes > bound && it.hasNext()) {
                Map.Entry<Key, byte[]> eldest = it.next();
                if (eldest.getKey().equals(key)) {
                    continue;
                }
                bytes -= eldest.getValue().length + OVERHEAD;
                it.remove();
            }
        }

        synchronized long bytes() {
            return bytes;
        }

        synchronized void clear() {
            entries.clear();
            bytes = 0;
        }
    }
}
