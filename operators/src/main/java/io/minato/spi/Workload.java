package io.minato.spi;

import io.minato.data.BadInputException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.util.Objects;

/**
 * A workload as the loader runs it: its samples and how each is prepared. The source, the fast and
 * slow workers, the baselines' loaders and the trainer's recipe (which prepares again a sample that
 * arrived without its bytes) see a workload only through this.
 *
 * @param <S> the opened source of one sample
 */
public final class Workload<S> implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final SampleSet<S> samples;
    private final Transforms<S> transforms;

    /**
     * @param name what the report and logs call it ({@code kits19}, {@code images})
     */
    public Workload(String name, SampleSet<S> samples, Transforms<S> transforms) {
        this.name = Objects.requireNonNull(name, "name");
        this.samples = Objects.requireNonNull(samples, "samples");
        this.transforms = Objects.requireNonNull(transforms, "transforms");
    }

    public String name() {
        return name;
    }

    public SampleSet<S> samples() {
        return samples;
    }

    public Transforms<S> transforms() {
        return transforms;
    }

    /** Training samples. */
    public int size() {
        return samples.size();
    }

    public Steps<S> start(SampleKey key) {
        return transforms.start(key);
    }

    /** A state that travelled as bytes ({@link Steps#writeTo}). */
    public Steps<S> read(byte[] state) throws IOException {
        return transforms.read(new DataInputStream(new ByteArrayInputStream(state)));
    }

    public S open(int index) throws BadInputException {
        return samples.open(index);
    }

    /** Runs the remaining steps of {@code steps} on sample {@code index}'s source. */
    public Patch finish(Steps<S> steps, int index) throws BadInputException {
        S source = samples.open(index);
        try {
            while (!steps.isDone()) {
                steps.advance(source);
            }
            samples.checkUnchanged(index);
        } catch (InternalError fault) {
            throw samples.changedWhileRead(index, fault);
        }
        return steps.result();
    }

    /**
     * Sample {@code key} prepared whole from sample {@code index}: for the loaders that prepare a
     * sample in one go and for the trainer's recipe.
     */
    public Patch prepare(SampleKey key, int index) throws BadInputException {
        return finish(start(key), index);
    }

    /**
     * What the sample set and the transforms remember between samples, together: the metrics' and
     * the report's hits, misses and bytes.
     */
    public MemoStats memo() {
        return samples.memo().plus(transforms.memo());
    }

    /** See {@link SampleSet#checkUnchanged}. */
    public void checkUnchanged(int index) throws BadInputException {
        samples.checkUnchanged(index);
    }

    /** See {@link SampleSet#changedWhileRead}. */
    public BadInputException changedWhileRead(int index, InternalError fault) {
        return samples.changedWhileRead(index, fault);
    }

    @Override
    public String toString() {
        return name + " (" + samples.size() + " samples)";
    }
}
