package io.minato.sample;

import io.minato.sample.serde.SampleTypes;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * The samples of one training step of one device, in arrival order; {@code sequence} counts from 0
 * per device.
 *
 * <p>{@code heldBackNanos} is how long, up to the moment its loader handed it out, the loader's
 * line was held on this batch's account: a loader that hands batches out strictly in order holds
 * ready batches back behind an unfinished head, and each batch of such a hold (the head that ended
 * it and the ready ones behind it) carries the hold's length up to its own handout. The trainer
 * counts that much of its wait for the batch as head-of-line rather than as the workers being
 * behind. A duration, not a time, so that it means the same in the trainer's TaskManager; 0 for a
 * batch no hold kept back, and for every batch of Minato's loader, which holds none.
 */
@TypeInfo(SampleTypes.BatchFactory.class)
public record Batch(int device, long sequence, List<PreparedSample> samples, long heldBackNanos) {
    public Batch {
        samples = List.copyOf(samples);
        if (heldBackNanos < 0) {
            throw new IllegalArgumentException("held back for " + heldBackNanos + " ns");
        }
    }

    /** A batch that no loader held back. */
    public Batch(int device, long sequence, List<PreparedSample> samples) {
        this(device, sequence, samples, 0);
    }

    /** The same batch with {@code other} samples (prepared again, or some left out). */
    public Batch withSamples(List<PreparedSample> other) {
        return new Batch(device, sequence, other, heldBackNanos);
    }
}
