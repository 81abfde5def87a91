package io.minato.workload.kits19;

import io.minato.spi.SampleKey;
import io.minato.spi.Steps;
import io.minato.spi.Transforms;
import java.io.DataInput;
import java.io.IOException;
import java.util.Objects;

/**
 * The MLPerf 3D-UNet training transforms ({@link Preparation}) as a workload's {@link Transforms}.
 */
public final class MlperfTransforms implements Transforms<Volume> {
    private static final long serialVersionUID = 1L;

    private final TransformConfig config;

    public MlperfTransforms(TransformConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    public TransformConfig config() {
        return config;
    }

    @Override
    public Steps<Volume> start(SampleKey key) {
        return Preparation.start(key, config);
    }

    @Override
    public Steps<Volume> read(DataInput in) throws IOException {
        return Preparation.readFrom(in).bind(config);
    }
}
