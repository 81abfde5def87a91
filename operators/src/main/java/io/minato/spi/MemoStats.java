package io.minato.spi;

/**
 * Lookups of results a workload remembers because they depend on a sample's file alone (not on the
 * seed or epoch): the web UI's and the report's cache figures.
 */
public interface MemoStats {

    /** Remembers nothing. */
    MemoStats NONE =
            new MemoStats() {
                @Override
                public long hits() {
                    return 0;
                }

                @Override
                public long misses() {
                    return 0;
                }

                @Override
                public long bytes() {
                    return 0;
                }
            };

    /** Lookups that found the result remembered. */
    long hits();

    /** Lookups that did not, so the sample computed it. */
    long misses();

    /** Bytes the remembered results hold in this JVM. */
    long bytes();

    /** Both counts together (a sample set's and its transforms'). */
    default MemoStats plus(MemoStats other) {
        if (other == NONE) {
            return this;
        }
        if (this == NONE) {
            return other;
        }
        MemoStats self = this;
        return new MemoStats() {
            @Override
            public long hits() {
                return self.hits() + other.hits();
            }

            @Override
            public long misses() {
                return self.misses() + other.misses();
            }

            @Override
            public long bytes() {
                return self.bytes() + other.bytes();
            }
        };
    }
}
