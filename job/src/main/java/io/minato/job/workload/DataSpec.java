package io.minato.job.workload;

import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.workload.kits19.CaseCache;
import io.minato.workload.kits19.TransformConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/**
 * What a run's samples are, each value checked where it was given: the workload, the folder it
 * reads (or the generated demo set), the edge of a sample, the seed, the held-out share, what bad
 * input does, the case cache and the benchmark's tail. The commands' options ({@code --data},
 * {@code --patch}, ...) make one; the workloads read it.
 *
 * @param data the folder of samples; null: the generated demo set under {@link #DEMO_DATA}
 * @param evalCases cases held out for evaluation; null: a fifth, as MLPerf
 * @param cases {@code --cases}: the file listing the training set, the folder's others held out;
 *     null: none (then {@code evalCases} splits the folder)
 * @param skipBadSamples {@code --on-bad-sample skip}: a bad case is left out, not a reason to stop
 * @param cacheDir where remembered per-case results are kept; null: inside the data folder
 * @param cacheMemoryMb the bound on remembered decoded images per JVM; null: a quarter of the heap
 * @param tail the benchmark's heavy tail; null: none
 * @param python the Python Dataset of {@code --workload python}; null: none given
 */
public record DataSpec(
        JobWorkload workload,
        Path data,
        int patchEdge,
        long seed,
        Integer evalCases,
        Path cases,
        boolean skipBadSamples,
        boolean caseCache,
        Path cacheDir,
        Long cacheMemoryMb,
        RunReport.Tail tail,
        Python python) {

    /**
     * {@code --dataset} and {@code --python}: the Dataset and the interpreter of its workers, and
     * how many worker processes a JVM may keep for it.
     */
    public record Python(String dataset, String interpreter, int processes) {
        /** Worker processes when the run does not say: a few, grown on demand. */
        public static final int DEFAULT_PROCESSES = 8;
    }

    /**
     * These samples, prepared by {@code workers} fast and slow workers in all: a Python Dataset
     * keeps up to two processes a worker (one still busy with a sample past its deadline).
     */
    public DataSpec forWorkers(int workers) {
        if (python == null) {
            return this;
        }
        Python p = new Python(python.dataset(), python.interpreter(), Math.max(2, 2 * workers));
        return new DataSpec(
                workload,
                data,
                patchEdge,
                seed,
                evalCases,
                cases,
                skipBadSamples,
                caseCache,
                cacheDir,
                cacheMemoryMb,
                tail,
                p);
    }

    /** Where the demo dataset is generated when no folder is given. */
    public static final Path DEMO_DATA = Path.of("data");

    /** Whether the run uses the generated demo set. */
    public boolean demo() {
        return data == null;
    }

    /**
     * An input of {@code dir} that failed its checks: it stops the run, or under {@link
     * #skipBadSamples} is left out, listed in {@code quarantine} and said in one line on {@code
     * err}.
     */
    public void leaveOut(
            BadInputException problem,
            Path dir,
            List<RunReport.Quarantine> quarantine,
            PrintWriter err)
            throws BadInputException {
        if (!skipBadSamples) {
            throw problem;
        }
        quarantine.add(RunReport.Quarantine.of(dir, problem));
        err.println("skipped: " + problem.getMessage());
    }

    /** The per-case cache asked for, over the given data folder. */
    public CaseCache caseCache(Path dataDir) {
        if (!caseCache) {
            return CaseCache.disabled();
        }
        return cacheDir != null ? CaseCache.at(cacheDir) : CaseCache.forData(dataDir);
    }

    /**
     * The bound on remembered decoded images in bytes per JVM: 0 when the cache is off, null for
     * the default (a quarter of the heap of the JVM that prepares the samples); never negative.
     */
    public Long memoBytes() {
        if (!caseCache) {
            return 0L;
        }
        if (cacheMemoryMb == null) {
            return null;
        }
        return cacheMemoryMb << 20;
    }

    public TransformConfig transformConfig() {
        TransformConfig c = TransformConfig.mlperf(patchEdge);
        return tail == null ? c : c.withTail(tail.fraction(), tail.factor());
    }
}
