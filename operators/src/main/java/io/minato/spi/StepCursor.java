package io.minato.spi;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.Objects;

/**
 * A {@link Steps} whose state machine is a cursor over the constants of an enum, ending at one that
 * means done: what every such preparation answers alike (its key, the step it is at, whether it is
 * done, its patch once done) and how its written state begins. Subclasses move {@link #step} on and
 * set {@link #patch}.
 *
 * @param <S> the opened source each step reads
 * @param <E> the steps, in order
 */
public abstract class StepCursor<S, E extends Enum<E>> implements Steps<S> {
    protected final SampleKey key;

    /** The step {@link #advance} runs next. */
    protected E step;

    /** The prepared sample; the result once {@link #step} is the last. */
    protected Patch patch;

    private final E done;

    /** At {@code first}, for {@code key}; done at {@code done}. */
    protected StepCursor(SampleKey key, E first, E done) {
        this.key = Objects.requireNonNull(key);
        this.step = Objects.requireNonNull(first);
        this.done = Objects.requireNonNull(done);
    }

    @Override
    public final SampleKey key() {
        return key;
    }

    /** The step {@link #advance} runs next. */
    public final E step() {
        return step;
    }

    @Override
    public final boolean isDone() {
        return step == done;
    }

    @Override
    public final Patch result() {
        if (!isDone()) {
            throw new IllegalStateException("preparation of " + key + " stopped at " + step);
        }
        return patch;
    }

    /** What {@link #advance} throws once done. */
    protected final IllegalStateException advancedWhenDone() {
        return new IllegalStateException("preparation of " + key + " is done");
    }

    /** Writes what the state begins with: {@code format}, the key and the step. */
    protected final void writeHead(DataOutput out, int format) throws IOException {
        out.writeByte(format);
        out.writeLong(key.seed());
        out.writeInt(key.epoch());
        out.writeLong(key.index());
        out.writeByte(step.ordinal());
    }

    /**
     * Reads the key of a state {@link #writeHead} began, refusing another format than {@code
     * format}; {@code what} names the state in the error.
     */
    protected static SampleKey readKey(DataInput in, int format, String what) throws IOException {
        int found = in.readUnsignedByte();
        if (found != format) {
            throw new IOException("unknown " + what + " state format " + found);
        }
        return new SampleKey(in.readLong(), in.readInt(), in.readLong());
    }

    /** Reads the step after the key, refusing one that is not a step. */
    protected final void readStep(DataInput in, String what) throws IOException {
        int ordinal = in.readUnsignedByte();
        E[] steps = done.getDeclaringClass().getEnumConstants();
        if (ordinal >= steps.length) {
            throw new IOException("corrupt " + what + " state: step " + ordinal);
        }
        step = steps[ordinal];
    }

    /** Writes the patch, if there is one yet: what the state ends with. */
    protected final void writePatch(DataOutput out) throws IOException {
        out.writeBoolean(patch != null);
        if (patch != null) {
            patch.writeTo(out);
        }
    }

    /** Reads what {@link #writePatch} wrote. */
    protected final void readPatch(DataInput in) throws IOException {
        patch = in.readBoolean() ? Patch.readFrom(in) : null;
    }
}
