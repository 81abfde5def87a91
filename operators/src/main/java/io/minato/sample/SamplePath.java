package io.minato.sample;

/**
 * Which path prepared a sample: within its deadline on a fast worker, or finished by the slow path.
 */
public enum SamplePath {
    FAST,
    SLOW;

    /** The trace CSV's spelling. */
    public String csv() {
        return this == FAST ? "fast" : "slow";
    }
}
