package io.minato.sample;

import io.minato.transform.Preparation;

/**
 * A sample that passed its deadline on a fast worker: the task, the preparation state to resume
 * from (no copy of the volume) and the CPU time already spent on it.
 */
public record UnfinishedSample(SampleTask task, Preparation preparation, long prepCpuNanos) {}
