package io.minato.sample;

import java.util.List;

/**
 * The samples of one training step of one device, in arrival order; {@code sequence} counts from 0
 * per device.
 */
public record Batch(int device, long sequence, List<PreparedSample> samples) {
    public Batch {
        samples = List.copyOf(samples);
    }
}
