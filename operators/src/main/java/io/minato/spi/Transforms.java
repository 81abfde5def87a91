package io.minato.spi;

import java.io.DataInput;
import java.io.IOException;
import java.io.Serializable;

/**
 * How a workload prepares a sample: starts its {@link Steps}, and reads a state written by one.
 * Shipped with the job graph, so it carries configuration only.
 *
 * @param <S> the opened source the steps read
 */
public interface Transforms<S> extends Serializable {

    /** The preparation of sample {@code key}, before its first step. */
    Steps<S> start(SampleKey key);

    /** A state written by {@link Steps#writeTo}, to continue from. */
    Steps<S> read(DataInput in) throws IOException;

    /**
     * What these transforms remember between samples ({@link FileMemo}s), for the metrics; {@link
     * MemoStats#NONE} if nothing.
     */
    default MemoStats memo() {
        return MemoStats.NONE;
    }
}
