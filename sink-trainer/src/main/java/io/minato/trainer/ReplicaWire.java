package io.minato.trainer;

import io.minato.spi.FloatIo;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * The messages between a {@link RemoteMember} and the {@link ReplicaLink} of its group's
 * TaskManager: a tag byte, then the call's arguments or its answer. Gradients travel as
 * little-endian float32, a length of -1 for none.
 */
final class ReplicaWire {
    // From a replica to its group.
    static final int HELLO = 1; // group id, size, replica
    static final int INITIAL = 2; // step
    static final int REDUCE = 3; // step, samples, gradient
    static final int CUT = 4; // checkpoint id
    static final int SNAPSHOTTED = 5; // checkpoint id
    static final int END = 6;
    static final int ABORT = 7; // message
    static final int LEAVE = 8;
    static final int STARVING = 9; // whether the replica waits for a batch with none queued

    // From the group to a replica.
    static final int INITIAL_STATE = 21; // start step, state
    static final int AVERAGE = 22; // gradient (-1: training is over)
    static final int CUT_TAKEN = 23; // global steps completed when the cut took hold
    static final int CUT_PENDING = 24; // the checkpoint a cut holds the group for, -1: none
    static final int FAILED = 25; // message: the group aborted
    static final int OTHERS_STARVING = 26; // whether another replica starves

    /** The largest state or gradient a message may carry: a corrupt length fails, not allocates. */
    private static final int MAX_LENGTH = Integer.MAX_VALUE - 16;

    private ReplicaWire() {}

    /** What follows a message's tag. */
    @FunctionalInterface
    interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    /** Writes message {@code tag} with {@code body} and flushes it; one writer at a time. */
    static void send(DataOutputStream out, int tag, Body body) throws IOException {
        out.writeByte(tag);
        body.write(out);
        out.flush();
    }

    static void writeFloats(DataOutputStream out, float[] values) throws IOException {
        if (values == null) {
            out.writeInt(-1);
            return;
        }
        out.writeInt(values.length);
        FloatIo.write(values, out);
    }

    static float[] readFloats(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n == -1) {
            return null;
        }
        if (n < 0 || n > MAX_LENGTH / Float.BYTES) {
            throw new IOException("corrupt replica message: " + n + " gradient values");
        }
        float[] values = new float[n];
        FloatIo.readFully(in, values);
        return values;
    }

    static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    static byte[] readBytes(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_LENGTH) {
            throw new IOException("corrupt replica message: a state of " + n + " bytes");
        }
        byte[] bytes = new byte[n];
        in.readFully(bytes);
        return bytes;
    }
}
