package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.spi.SampleKey;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * What the source emits: a sample to prepare, not its data. {@code caseIndex} points into the job's
 * list of training cases.
 */
@TypeInfo(SampleTypes.SampleTaskFactory.class)
public record SampleTask(long seed, int epoch, long index, int caseIndex) {
    public SampleKey key() {
        return new SampleKey(seed, epoch, index);
    }
}
