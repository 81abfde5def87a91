package io.minato.spi;

import io.minato.data.BadInputException;
import java.io.DataOutput;
import java.io.IOException;

/**
 * One sample's preparation as a sequence of short, resumable steps: the unit Minato's fast/slow
 * split works on. A fast worker runs steps until the sample is done or its deadline passes; then
 * this object (its whole state) moves to a slow worker, in this JVM as it is or elsewhere as the
 * bytes of {@link #writeTo}, and continues there. Every random choice must come from a stream keyed
 * by {@link #key} (see {@link io.minato.spi.SampleRandom}), so that the result is the same bytes
 * whichever thread ran which step, and after a restore that starts the sample over.
 *
 * @param <S> the opened source ({@link SampleSet#open}) each step reads
 */
public interface Steps<S> {

    /** The sample being prepared: (seed, epoch, index). */
    SampleKey key();

    boolean isDone();

    /**
     * Runs the next step, or a part of it: a few milliseconds, so that a sample past its deadline
     * leaves its worker soon.
     *
     * @throws BadInputException the source is not what the workload reads (a corrupt image, say):
     *     one line naming the file
     */
    void advance(S source) throws BadInputException;

    /**
     * The transform the next {@link #advance} runs (a part of), as {@code profile} names it: steps
     * of one transform share a name. By default the preparation is one whole.
     */
    default String stepName() {
        return "prepare";
    }

    /**
     * What kind of sample this turned out to be, where a workload's samples come in kinds that cost
     * differently (kits19: a foreground-centred or a uniform crop), for {@code profile}; null where
     * there is one kind, or before the preparation has chosen.
     */
    default String variant() {
        return null;
    }

    /**
     * CPU time spent on this sample outside the JVM (a Python worker process), which the loader
     * adds to what its own threads spent; 0 where everything runs in the JVM.
     */
    default long outsideCpuNanos() {
        return 0;
    }

    /** The prepared sample, once {@link #isDone}. */
    Patch result();

    /** About how many bytes this state holds (what the in-JVM handoff counts it as). */
    long heldBytes();

    /** Writes the whole state; {@link Transforms#read} reads it back. */
    void writeTo(DataOutput out) throws IOException;
}
