package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * The samples of one training step of one device, in arrival order; {@code sequence} counts from 0
 * per device.
 */
@TypeInfo(SampleTypes.BatchFactory.class)
public record Batch(int device, long sequence, List<PreparedSample> samples) {
    public Batch {
        samples = List.copyOf(samples);
    }
}
