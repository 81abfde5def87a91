package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import io.minato.transform.Patch;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * A sample ready to train on, with where and at what CPU cost it was prepared.
 *
 * <p>{@code device} is the device whose batcher takes the sample, dealt by the worker that finished
 * it when it finished (Minato's loader), or {@link #ANY_DEVICE} where whole batches are routed
 * instead (the in-order loaders, samples prepared again by a trainer).
 */
@TypeInfo(SampleTypes.PreparedSampleFactory.class)
public record PreparedSample(
        SampleTask task, SamplePath path, long prepCpuNanos, Patch patch, int device) {

    /** Not dealt to a device: the sample travels inside a batch that names its device. */
    public static final int ANY_DEVICE = -1;

    public PreparedSample {
        if (device < ANY_DEVICE) {
            throw new IllegalArgumentException("device must be >= 0 or ANY_DEVICE: " + device);
        }
    }

    /** A sample not dealt to any device. */
    public PreparedSample(SampleTask task, SamplePath path, long prepCpuNanos, Patch patch) {
        this(task, path, prepCpuNanos, patch, ANY_DEVICE);
    }

    /** The same sample with its patch (prepared again, or dropped for a checkpoint). */
    public PreparedSample withPatch(Patch newPatch) {
        return new PreparedSample(task, path, prepCpuNanos, newPatch, device);
    }
}
