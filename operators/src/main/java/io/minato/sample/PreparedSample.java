package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.transform.Patch;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/** A sample ready to train on, with where and at what CPU cost it was prepared. */
@TypeInfo(SampleTypes.PreparedSampleFactory.class)
public record PreparedSample(SampleTask task, SamplePath path, long prepCpuNanos, Patch patch) {}
