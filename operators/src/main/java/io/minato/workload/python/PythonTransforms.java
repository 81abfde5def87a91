package io.minato.workload.python;

import io.minato.spi.SampleKey;
import io.minato.spi.Steps;
import io.minato.spi.Transforms;
import java.io.DataInput;
import java.io.IOException;

/** A Python Dataset's {@code __getitem__}, run by this JVM's worker processes. */
public record PythonTransforms(PythonDataset dataset) implements Transforms<PythonSource> {
    private static final long serialVersionUID = 1L;

    @Override
    public Steps<PythonSource> start(SampleKey key) {
        return new PythonPreparation(key);
    }

    @Override
    public Steps<PythonSource> read(DataInput in) throws IOException {
        return PythonPreparation.readFrom(in);
    }
}
