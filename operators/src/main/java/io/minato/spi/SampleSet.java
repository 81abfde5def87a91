package io.minato.spi;

import io.minato.data.BadInputException;
import java.io.Serializable;

/**
 * The training samples of a workload, as the loader's operators see them: how many, what each is
 * called, and each one's source opened cheaply (memory mapped, or its bytes read once and kept).
 * Shipped with the job graph, so it holds file names, not data; {@link #open} runs on the
 * TaskManager, from any worker thread.
 *
 * @param <S> an opened sample source, handed to the preparation's {@link Steps#advance}
 */
public interface SampleSet<S> extends Serializable {

    /** Samples, indexed from 0. */
    int size();

    /**
     * What the trace CSV's {@code case} column says of sample {@code index}: how a user finds its
     * source.
     */
    String traceName(int index);

    /**
     * What a person calls sample {@code index} in a line of output (the slowest sample of a
     * profile): its file's name. By default what the trace says.
     */
    default String displayName(int index) {
        return traceName(index);
    }

    /**
     * Checks sample {@code index} before a run trains on it, without preparing it.
     *
     * @throws BadInputException a one-line reason, naming the file
     */
    void check(int index) throws BadInputException;

    /**
     * Opens sample {@code index}'s source. Called for every sample a worker prepares, so an
     * implementation keeps recent sources open; must be safe to call from several threads.
     *
     * @throws BadInputException a one-line reason, naming the file
     */
    S open(int index) throws BadInputException;

    /**
     * What a fault while reading sample {@code index}'s memory-mapped source means (the JVM reports
     * a file truncated under a mapping as an {@link InternalError}, which Flink treats as fatal).
     * Returns the one-line error to fail the job with, or throws {@code fault} again when it was
     * not that. By default nothing is mapped and the fault is thrown again.
     */
    default BadInputException changedWhileRead(int index, InternalError fault) {
        throw fault;
    }

    /**
     * Called after the loader read sample {@code index}'s source, before what it read leaves the
     * loader's guard: a set whose sources are memory mapped checks that they are unchanged since
     * they were mapped. On Java 17 a fault in a mapped read is not thrown where it happened but at
     * the thread's next call into the JVM, which may be deep inside Flink (a half-updated buffer,
     * then the process stopped); when a file changed, an implementation takes any such pending
     * fault here. By default nothing is mapped and there is nothing to check.
     *
     * @throws BadInputException one line naming the file that changed
     */
    default void checkUnchanged(int index) throws BadInputException {}

    /**
     * What this set remembers between samples, for the metrics; {@link MemoStats#NONE} if nothing.
     */
    default MemoStats memo() {
        return MemoStats.NONE;
    }
}
