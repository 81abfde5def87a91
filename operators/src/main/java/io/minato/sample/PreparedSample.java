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
 *
 * <p>{@code handOff}: its receiver runs in the producer's TaskManager, so the patch may wait in
 * this JVM's {@link SampleHandoff} while only the identity travels. Set by the producer from where
 * the receiver said it runs; otherwise (and always after a record was read back) the patch travels
 * as bytes.
 */
@TypeInfo(SampleTypes.PreparedSampleFactory.class)
public record PreparedSample(
        SampleTask task,
        SamplePath path,
        long prepCpuNanos,
        Patch patch,
        int device,
        boolean handOff) {

    /** Not dealt to a device: the sample travels inside a batch that names its device. */
    public static final int ANY_DEVICE = -1;

    public PreparedSample {
        if (device < ANY_DEVICE) {
            throw new IllegalArgumentException("device must be >= 0 or ANY_DEVICE: " + device);
        }
    }

    /** A sample dealt to {@code device} whose patch travels as bytes. */
    public PreparedSample(
            SampleTask task, SamplePath path, long prepCpuNanos, Patch patch, int device) {
        this(task, path, prepCpuNanos, patch, device, false);
    }

    /** A sample not dealt to any device. */
    public PreparedSample(SampleTask task, SamplePath path, long prepCpuNanos, Patch patch) {
        this(task, path, prepCpuNanos, patch, ANY_DEVICE, false);
    }

    /** The same sample with its patch (prepared again, or dropped for a checkpoint). */
    public PreparedSample withPatch(Patch newPatch) {
        return new PreparedSample(task, path, prepCpuNanos, newPatch, device, handOff);
    }

    /** The same sample, whose patch may wait in the handoff ({@code true}) or not. */
    public PreparedSample withHandOff(boolean mayWait) {
        return mayWait == handOff
                ? this
                : new PreparedSample(task, path, prepCpuNanos, patch, device, mayWait);
    }
}
