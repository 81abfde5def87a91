package io.minato.workload.kits19;

import io.minato.data.BadInputException;
import io.minato.data.FileNames;
import io.minato.data.FileStamp;
import io.minato.spi.MemoStats;
import io.minato.spi.SampleSet;
import io.minato.spi.Workload;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The training cases as the operators see them: file names by case index (serializable, shipped
 * with the job graph), opened lazily and kept mapped in a small per-operator cache, each with its
 * {@link CaseCache} memo so that what depends on a case's files alone is computed once.
 */
public final class CaseTable implements SampleSet<Volume> {
    private static final long serialVersionUID = 1L;
    private static final int OPEN_VOLUMES = 64;

    private final String[] names;
    private final String[] images;
    private final String[] labels;
    private final CaseCache cache;
    private transient Map<Integer, Mapped> open;
    private transient CaseCache.Counters counters;

    /** Cases that remember nothing between samples (tests, and {@code --no-case-cache}). */
    public CaseTable(List<CaseFiles> cases) {
        this(cases, CaseCache.disabled());
    }

    public CaseTable(List<CaseFiles> cases, CaseCache cache) {
        this.cache = cache;
        int n = cases.size();
        names = new String[n];
        images = new String[n];
        labels = new String[n];
        for (int i = 0; i < n; i++) {
            names[i] = cases.get(i).name();
            images[i] = cases.get(i).image().toAbsolutePath().toString();
            labels[i] = cases.get(i).label().toAbsolutePath().toString();
        }
    }

    /** The KiTS19 workload: these cases, prepared by the MLPerf transforms with {@code config}. */
    public Workload<Volume> workload(TransformConfig config) {
        return new Workload<>("kits19", this, new MlperfTransforms(config));
    }

    @Override
    public int size() {
        return names.length;
    }

    /** The case's name ({@code case_00012}). */
    @Override
    public String displayName(int index) {
        return names[index];
    }

    /**
     * The case's number ({@code 12} for {@code case_00012}), as the contract's trace names it:
     * where the training set is a list or a case was left out, not its place in the training set.
     */
    @Override
    public String traceName(int index) {
        return number(names[index]);
    }

    /** {@code 12} of {@code case_00012}; a name not of that form as it is. */
    static String number(String name) {
        String digits = name.startsWith("case_") ? name.substring("case_".length()) : "";
        if (digits.isEmpty() || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return name;
        }
        return digits.replaceFirst("^0+(?=.)", "");
    }

    /**
     * The whole check of the case's files: headers, shapes, values, foreground. Whether a volume
     * holds the patch is the transforms' condition, which the train command checks beside this.
     */
    @Override
    public void check(int index) throws BadInputException {
        CaseCheck.check(files(index), null);
    }

    @Override
    public Volume open(int index) throws BadInputException {
        return volume(index);
    }

    public CaseFiles files(int caseIndex) {
        return new CaseFiles(
                names[caseIndex], Path.of(images[caseIndex]), Path.of(labels[caseIndex]));
    }

    /**
     * The case's volumes, memory mapped; mappings are reused across samples of the same case.
     * Synchronized because the in-order loader's workers share one table; opening only maps.
     */
    public Volume volume(int caseIndex) throws BadInputException {
        return opened(caseIndex).volume();
    }

    private synchronized Mapped opened(int caseIndex) throws BadInputException {
        if (open == null) {
            open =
                    new LinkedHashMap<>(16, 0.75f, true) {
                        @Override
                        protected boolean removeEldestEntry(Map.Entry<Integer, Mapped> eldest) {
                            return size() > OPEN_VOLUMES;
                        }
                    };
        }
        Mapped m = open.get(caseIndex);
        if (m == null) {
            // Once a mapping, not once a sample: a worker in a JVM whose locale cannot hold the
            // names is told so in one line.
            FileNames.of(images[caseIndex]);
            FileNames.of(labels[caseIndex]);
            CaseFiles f = files(caseIndex);
            Mapped shared = mapped(f);
            m = shared.withVolume(shared.volume().withMemo(cache.memo(f, counters())));
            open.put(caseIndex, m);
        }
        return m;
    }

    /** A case's volumes as mapped, with its files as they were when mapped. */
    private record Mapped(Volume volume, FileStamp image, FileStamp label) {
        Mapped withVolume(Volume v) {
            return new Mapped(v, image, label);
        }

        boolean unchanged(CaseFiles f) {
            try {
                return image.equals(FileStamp.of(f.image()))
                        && label.equals(FileStamp.of(f.label()));
            } catch (IOException e) {
                return false; // gone or unreadable: not the file that was mapped
            }
        }
    }

    /**
     * Mappings shared by every operator in this JVM: the kernel hands out a page of a mapping on
     * its first touch, so three operators with their own mappings of a case touched (and faulted
     * on) every page three times. Keyed by the files' identity, so a replaced file is mapped anew.
     */
    private static final Map<String, Mapped> MAPPED =
            new LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Mapped> eldest) {
                    return size() > OPEN_VOLUMES;
                }
            };

    private static Mapped mapped(CaseFiles f) throws BadInputException {
        FileStamp image;
        FileStamp label;
        try {
            image = FileStamp.of(f.image());
            label = FileStamp.of(f.label());
        } catch (IOException e) {
            CaseCheck.open(f); // says in one line what is wrong with the files
            throw new BadInputException(f.image(), "cannot be read: " + e.getMessage(), e);
        }
        String key = image + "|" + label;
        synchronized (MAPPED) {
            Mapped m = MAPPED.get(key);
            if (m == null) {
                m = new Mapped(CaseCheck.open(f), image, label);
                MAPPED.put(key, m);
            }
            return m;
        }
    }

    /**
     * Checks that the case's files are the ones this table mapped (path, size, modification time,
     * inode): two {@code stat} calls a sample. A file truncated or rewritten in place under a
     * mapping makes the reads fault; Java 17 throws that {@link InternalError} only at the thread's
     * next call into the JVM, which may be inside Flink after the guarded read: here, with the file
     * seen changed, a large allocation (always such a call) takes the pending fault while the guard
     * still holds.
     */
    @Override
    public void checkUnchanged(int caseIndex) throws BadInputException {
        CaseFiles f;
        try { // all of it: the fault may be taken by any allocation here
            Mapped m;
            synchronized (this) {
                m = open == null ? null : open.get(caseIndex);
            }
            if (m == null) {
                return; // not read through this table
            }
            f = files(caseIndex);
            if (m.unchanged(f)) {
                return;
            }
            takePendingFault();
        } catch (InternalError fault) {
            throw changedWhileRead(caseIndex, fault);
        }
        throw changedWhileRead(f);
    }

    /** Keeps the large array below from being optimised away. */
    private static volatile int sink;

    /**
     * Throws the mapped-read fault pending on this thread, if any: an array larger than any
     * thread-local allocation buffer is allocated by a call into the JVM, which throws it.
     */
    private static void takePendingFault() {
        try {
            sink = new byte[64 << 20].length;
        } catch (OutOfMemoryError e) {
            // no room for it: the file changed all the same, which the caller says
        }
    }

    /**
     * What a fault while reading case {@code caseIndex}'s mapped files means: a file shrank (was
     * truncated or rewritten in place) after the run mapped it. The JVM reports it as an {@link
     * InternalError}, which Flink treats as fatal and stops the process for; this turns it into one
     * line naming the case's files. Any other internal error is thrown again as it was.
     */
    @Override
    public BadInputException changedWhileRead(int caseIndex, InternalError fault) {
        if (fault.getMessage() == null || !fault.getMessage().contains("unsafe memory access")) {
            throw fault;
        }
        BadInputException changed = changedWhileRead(files(caseIndex));
        changed.initCause(fault);
        return changed;
    }

    private static BadInputException changedWhileRead(CaseFiles f) {
        return new BadInputException(
                f.image(),
                "changed while the run read it ("
                        + f.image().getFileName()
                        + " or "
                        + f.label().getFileName()
                        + " truncated or rewritten in place?); a data set must stay unchanged"
                        + " while it trains");
    }

    public CaseCache cache() {
        return cache;
    }

    @Override
    public MemoStats memo() {
        CaseCache.Counters c = counters();
        return new MemoStats() {
            @Override
            public long hits() {
                return c.hits();
            }

            @Override
            public long misses() {
                return c.misses();
            }

            @Override
            public long bytes() {
                return CaseCache.memoryBytes();
            }
        };
    }

    /** This table's (this operator's) lookups of remembered per-case results. */
    public synchronized CaseCache.Counters counters() {
        if (counters == null) {
            counters = new CaseCache.Counters();
        }
        return counters;
    }
}
