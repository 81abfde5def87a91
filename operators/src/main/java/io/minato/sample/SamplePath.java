package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * Which path prepared a sample: within its deadline on a fast worker, or finished by the slow path.
 */
@TypeInfo(SampleTypes.SamplePathFactory.class)
public enum SamplePath {
    FAST,
    SLOW;

    /** The trace CSV's spelling. */
    public String csv() {
        return this == FAST ? "fast" : "slow";
    }
}
