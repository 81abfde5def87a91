package io.minato.workload.python;

import java.io.Serializable;
import java.util.Objects;

/**
 * A user's map-style PyTorch Dataset as the job ships it: what names it ({@code MODULE:CALLABLE},
 * or a file the Python package pickled it into), the interpreter that runs it, its length and how
 * it describes itself, both as a worker said when the run started.
 *
 * @param spec {@code --dataset}: {@code MODULE:CALLABLE} or a {@code .pkl} file
 * @param python {@code --python}: the interpreter of the workers
 * @param processes the most worker processes one JVM keeps for it
 */
public record PythonDataset(String spec, String python, int size, String description, int processes)
        implements Serializable {

    public PythonDataset {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(python, "python");
        Objects.requireNonNull(description, "description");
        if (size < 1) {
            throw new IllegalArgumentException("--dataset " + spec + " has no samples (len 0)");
        }
        if (processes < 1) {
            throw new IllegalArgumentException("worker processes must be >= 1: " + processes);
        }
    }

    /** This JVM's pool of worker processes for the dataset, started on first use. */
    public PythonWorkers workers() {
        return PythonWorkers.of(this);
    }
}
