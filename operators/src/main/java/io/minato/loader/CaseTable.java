package io.minato.loader;

import io.minato.data.BadInputException;
import io.minato.data.CaseCache;
import io.minato.data.CaseCheck;
import io.minato.data.CaseFiles;
import io.minato.transform.Volume;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The training cases as the operators see them: file names by case index (serializable, shipped
 * with the job graph), opened lazily and kept mapped in a small per-operator cache, each with its
 * {@link CaseCache} memo so that what depends on a case's files alone is computed once.
 */
public final class CaseTable implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final int OPEN_VOLUMES = 64;

    private final String[] names;
    private final String[] images;
    private final String[] labels;
    private final CaseCache cache;
    private transient Map<Integer, Volume> open;
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

    public int size() {
        return names.length;
    }

    public CaseFiles files(int caseIndex) {
        return new CaseFiles(
                names[caseIndex], Path.of(images[caseIndex]), Path.of(labels[caseIndex]));
    }

    /**
     * The case's volumes, memory mapped; mappings are reused across samples of the same case.
     * Synchronized because the in-order loader's workers share one table; opening only maps.
     */
    public synchronized Volume volume(int caseIndex) throws BadInputException {
        if (open == null) {
            open =
                    new LinkedHashMap<>(16, 0.75f, true) {
                        @Override
                        protected boolean removeEldestEntry(Map.Entry<Integer, Volume> eldest) {
                            return size() > OPEN_VOLUMES;
                        }
                    };
        }
        Volume v = open.get(caseIndex);
        if (v == null) {
            CaseFiles f = files(caseIndex);
            v = CaseCheck.open(f).withMemo(cache.memo(f, counters()));
            open.put(caseIndex, v);
        }
        return v;
    }

    public CaseCache cache() {
        return cache;
    }

    /** This table's (this operator's) lookups of remembered per-case results. */
    public synchronized CaseCache.Counters counters() {
        if (counters == null) {
            counters = new CaseCache.Counters();
        }
        return counters;
    }
}
