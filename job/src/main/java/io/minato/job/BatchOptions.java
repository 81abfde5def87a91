package io.minato.job;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The batch size: shared by train and step-time, checked as it is given. */
public final class BatchOptions {
    public static final int DEFAULT_BATCH = 2;

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    private int batch = DEFAULT_BATCH;

    @Option(
            names = "--batch",
            paramLabel = "B",
            description = "Samples per batch per device (default: " + DEFAULT_BATCH + ").")
    void setBatch(int value) {
        if (value < 1) {
            throw new ParameterException(spec.commandLine(), "--batch must be >= 1, not " + value);
        }
        batch = value;
    }

    public int batch() {
        return batch;
    }
}
