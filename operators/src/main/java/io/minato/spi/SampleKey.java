package io.minato.spi;

/**
 * What makes a prepared sample what it is: the run seed, the epoch and the sample's index in the
 * epoch. The same key always gives the bit-identical prepared sample.
 */
public record SampleKey(long seed, int epoch, long index) {
    public SampleKey {
        if (epoch < 0 || index < 0) {
            throw new IllegalArgumentException(
                    "epoch and index must be >= 0: " + epoch + ", " + index);
        }
    }
}
