package io.minato.sample;

import io.minato.transform.Patch;

/** A sample ready to train on, with where and at what CPU cost it was prepared. */
public record PreparedSample(SampleTask task, SamplePath path, long prepCpuNanos, Patch patch) {}
