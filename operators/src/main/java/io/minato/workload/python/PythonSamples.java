package io.minato.workload.python;

import io.minato.spi.SampleSet;

/**
 * A Python Dataset's samples: {@code len(dataset)} of them, each named by its index. Nothing is
 * checked ahead: only {@code __getitem__} says whether a sample is good, and it runs when the
 * sample is prepared.
 */
public record PythonSamples(PythonDataset dataset) implements SampleSet<PythonSource> {
    private static final long serialVersionUID = 1L;

    @Override
    public int size() {
        return dataset.size();
    }

    @Override
    public String traceName(int index) {
        return Integer.toString(index);
    }

    @Override
    public void check(int index) {}

    @Override
    public PythonSource open(int index) {
        return new PythonSource(dataset.workers(), index);
    }
}
