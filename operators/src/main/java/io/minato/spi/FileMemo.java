package io.minato.spi;

import io.minato.data.FileStamp;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A result of preparing a sample that is a pure function of the sample's file, never of the seed or
 * epoch (a decoded image, say), declared by a workload's {@link Transforms} and remembered by the
 * loader in each JVM under a memory bound, so that it is computed once rather than every epoch. A
 * remembered result is shared by every worker thread: treat it as immutable.
 *
 * <p>Entries are keyed by the file's identity (absolute path, size, modification time, file key): a
 * changed or replaced file is a miss and is computed again. Take the {@link #lookup} before reading
 * the file, so that what is remembered is never newer than its key.
 *
 * <p>Once the bound is reached nothing more is admitted and nothing is evicted: an epoch visits
 * every sample once in a shuffled order, so whichever results an eviction kept would be needed no
 * sooner than those it dropped, and churning would allocate fresh memory for every miss. The share
 * of samples that fit is the share of hits.
 *
 * <p>This object holds the declaration (it ships with the job graph) and one user's hit and miss
 * counts; the stores are per JVM, one per name.
 *
 * @param <T> the remembered result
 */
public final class FileMemo<T> implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The bound, unless told otherwise: this share of the JVM's maximum heap. */
    public static final double DEFAULT_HEAP_SHARE = 0.25;

    /** Bytes counted for an entry beside its result: the key, the map's node. */
    static final long ENTRY_OVERHEAD = 256;

    /** How many bytes a result holds in memory. */
    @FunctionalInterface
    public interface Sizer<T> extends Serializable {
        long bytes(T value);
    }

    private final String name;
    private final long bound;
    private final Sizer<T> sizer;
    private transient AtomicLong hits;
    private transient AtomicLong misses;

    private FileMemo(String name, long bound, Sizer<T> sizer) {
        this.name = Objects.requireNonNull(name, "name");
        this.bound = bound;
        this.sizer = Objects.requireNonNull(sizer, "sizer");
    }

    /**
     * Results named {@code name} (one store per name in a JVM), kept up to {@value
     * #DEFAULT_HEAP_SHARE} of the heap of the JVM that prepares the samples.
     */
    public static <T> FileMemo<T> declare(String name, Sizer<T> sizer) {
        return new FileMemo<>(name, -1, sizer);
    }

    /** The same results, kept up to {@code bytes} per JVM; 0 remembers nothing. */
    public FileMemo<T> withBound(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("a memo's bound must be >= 0, not " + bytes);
        }
        return new FileMemo<>(name, bytes, sizer);
    }

    /** The same results, never remembered: every sample computes them (the same bytes). */
    public FileMemo<T> disabled() {
        return withBound(0);
    }

    public String name() {
        return name;
    }

    /** Whether anything is ever remembered. */
    public boolean enabled() {
        return bound != 0;
    }

    /** The bound in bytes per JVM, as this JVM reads it. */
    public long boundBytes() {
        return bound >= 0 ? bound : (long) (Runtime.getRuntime().maxMemory() * DEFAULT_HEAP_SHARE);
    }

    /** One file's entry: its remembered result, if any, and the way to remember one. */
    public interface Lookup<T> {

        /** The remembered result, or null: compute it (and {@link #remember} it). */
        T value();

        /**
         * Keeps {@code value}, computed from the file as it was when looked up, if it fits.
         *
         * @return whether it is kept (shared with later lookups from now on)
         */
        boolean remember(T value);
    }

    /**
     * Looks up the result for {@code file}, counting a hit or a miss. A file whose attributes
     * cannot be read, or a memo that is off, is a miss that remembers nothing (reading the file
     * will say what is wrong).
     */
    public Lookup<T> lookup(Path file) {
        FileStamp stamp = enabled() ? stamp(file) : null;
        Store store = store(name);
        @SuppressWarnings("unchecked")
        T known = stamp == null ? null : (T) store.get(stamp);
        counter(known != null).incrementAndGet();
        return new Lookup<>() {
            @Override
            public T value() {
                return known;
            }

            @Override
            public boolean remember(T computed) {
                return stamp != null
                        && computed != null
                        && store.put(
                                stamp,
                                computed,
                                sizer.bytes(computed) + ENTRY_OVERHEAD,
                                boundBytes());
            }
        };
    }

    /** This user's lookups, and the bytes this JVM's store for the name holds. */
    public MemoStats stats() {
        return new MemoStats() {
            @Override
            public long hits() {
                return counter(true).get();
            }

            @Override
            public long misses() {
                return counter(false).get();
            }

            @Override
            public long bytes() {
                return store(name).bytes();
            }
        };
    }

    private synchronized AtomicLong counter(boolean hit) {
        if (hits == null) {
            hits = new AtomicLong();
            misses = new AtomicLong();
        }
        return hit ? hits : misses;
    }

    /** Forgets every result remembered under {@code name} in this JVM (tests: a cold start). */
    public static void clear(String name) {
        STORES.remove(name);
    }

    // ---- the per-JVM stores ----

    private static final Map<String, Store> STORES = new ConcurrentHashMap<>();

    private static Store store(String name) {
        return STORES.computeIfAbsent(name, n -> new Store());
    }

    /** The file as it is now, or null when its attributes cannot be read. */
    private static FileStamp stamp(Path file) {
        try {
            return FileStamp.of(file);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private record Entry(FileStamp stamp, Object value, long bytes) {}

    /** Results by path; the entry of a file whose stamp changed is replaced, never served. */
    private static final class Store {
        private final Map<String, Entry> entries = new HashMap<>();
        private long bytes;

        synchronized Object get(FileStamp stamp) {
            Entry e = entries.get(stamp.path());
            return e != null && e.stamp().equals(stamp) ? e.value() : null;
        }

        /** Whether {@code value} is kept (false: over the bound, or another's result is). */
        synchronized boolean put(FileStamp stamp, Object value, long size, long bound) {
            Entry old = entries.get(stamp.path());
            if (old != null && old.stamp().equals(stamp)) {
                return false; // another worker computed it meanwhile and keeps its own
            }
            if (old != null) { // the file changed: its old result is never served again
                entries.remove(stamp.path());
                bytes -= old.bytes();
            }
            if (bytes + size > bound) {
                return false;
            }
            entries.put(stamp.path(), new Entry(stamp, value, size));
            bytes += size;
            return true;
        }

        synchronized long bytes() {
            return bytes;
        }
    }
}
