package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.transform.Preparation;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * A sample that passed its deadline on a fast worker: the task, the preparation state to resume
 * from (no copy of the volume) and the CPU time already spent on it.
 */
@TypeInfo(SampleTypes.UnfinishedSampleFactory.class)
public record UnfinishedSample(SampleTask task, Preparation preparation, long prepCpuNanos) {}
