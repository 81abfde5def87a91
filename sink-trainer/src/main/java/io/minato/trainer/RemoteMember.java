package io.minato.trainer;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * A replica whose group lives in another TaskManager: each call goes to that group's {@link
 * ReplicaLink} over one TCP connection and, where the group answers, waits for the answer. The
 * gradient crosses as bytes once per step each way, as in DDP's gloo backend on CPUs.
 *
 * <p>{@link #parked()} has no lock to look under: this replica counts as parked while its
 * all-reduce is unanswered and the group had not completed that step when this replica last cut it.
 * After a {@link #cut} no step completes until the cut is released, so that is exact for a
 * snapshot, which always cuts first; elsewhere it may say parked a moment too long, which only lets
 * the writer take a batch early.
 */
final class RemoteMember implements ReplicaGroup.Member {
    private static final int BUFFER_BYTES = 1 << 16;
    private static final int CONNECT_TIMEOUT_MILLIS = 10_000;

    private final int replica;
    private final int size;
    private final String where;
    private final Socket socket;
    private final DataOutputStream out;
    private final DataInputStream in;
    private final Thread reader;

    // The one call that waits for the group (initial state or all-reduce): the worker's.
    private volatile CompletableFuture<Object> call = new CompletableFuture<>();
    private volatile CompletableFuture<Long> cutTaken = new CompletableFuture<>();
    private volatile long outstanding; // the step posted and not answered; 0: none
    private volatile long completedAtCut = -1;
    private volatile long pendingCut = -1;
    private volatile boolean othersStarving;
    private volatile long startStep;
    private volatile Throwable failure;
    private volatile boolean leaving;

    private RemoteMember(int replica, int size, InetSocketAddress root, Socket socket)
            throws IOException {
        this.replica = replica;
        this.size = size;
        this.where = root.getHostString() + ":" + root.getPort();
        this.socket = socket;
        this.out =
                new DataOutputStream(
                        new BufferedOutputStream(socket.getOutputStream(), BUFFER_BYTES));
        this.in =
                new DataInputStream(new BufferedInputStream(socket.getInputStream(), BUFFER_BYTES));
        this.reader = new Thread(this::read, "replica-" + replica + "-link");
        reader.setDaemon(true);
    }

    /** Joins replica {@code replica} of {@code size} to group {@code group} at {@code root}. */
    static RemoteMember connect(InetSocketAddress root, String group, int size, int replica)
            throws IOException {
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            socket.connect(root, CONNECT_TIMEOUT_MILLIS);
            RemoteMember m = new RemoteMember(replica, size, root, socket);
            m.send(
                    o -> {
                        o.writeUTF(group);
                        o.writeInt(size);
                        o.writeInt(replica);
                    },
                    ReplicaWire.HELLO);
            m.reader.start();
            return m;
        } catch (IOException e) {
            socket.close();
            throw new IOException(
                    "device "
                            + replica
                            + " cannot reach the trainers' replica group in replica 0's TaskManager"
                            + " at "
                            + root.getHostString()
                            + ":"
                            + root.getPort()
                            + ": "
                            + e.getMessage(),
                    e);
        }
    }

    @Override
    public int replica() {
        return replica;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public byte[] initialState(byte[] mine, long step) throws InterruptedException {
        // Only replica 0's state counts, and this one is never replica 0: the step goes alone.
        CompletableFuture<Object> f = newCall();
        send(o -> o.writeLong(step), ReplicaWire.INITIAL);
        return (byte[]) await(f);
    }

    @Override
    public long startStep() {
        return startStep;
    }

    @Override
    public float[] allReduce(long step, float[] gradient, int samples) throws InterruptedException {
        ReplicaGroup.checkPost(gradient, samples);
        CompletableFuture<Object> f = newCall();
        outstanding = step;
        try {
            send(
                    o -> {
                        o.writeLong(step);
                        o.writeInt(samples);
                        ReplicaWire.writeFloats(o, gradient);
                    },
                    ReplicaWire.REDUCE);
            return (float[]) await(f);
        } finally {
            outstanding = 0;
        }
    }

    @Override
    public boolean parked() {
        long step = outstanding;
        return step != 0 && step > completedAtCut;
    }

    @Override
    public void cut(long checkpointId) {
        if (failure != null) {
            return; // the worker fails with the group's cause
        }
        CompletableFuture<Long> f = new CompletableFuture<>();
        cutTaken = f;
        if (failure != null) {
            return;
        }
        send(o -> o.writeLong(checkpointId), ReplicaWire.CUT);
        try {
            completedAtCut = await(f);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(
                    "device " + replica + " was interrupted while cutting for a checkpoint", e);
        }
    }

    @Override
    public long pendingCut() {
        return pendingCut;
    }

    @Override
    public void starving(boolean starving) {
        sendQuietly(o -> o.writeBoolean(starving), ReplicaWire.STARVING);
    }

    @Override
    public boolean othersStarving() {
        return othersStarving;
    }

    @Override
    public void snapshotted(long checkpointId) {
        sendQuietly(o -> o.writeLong(checkpointId), ReplicaWire.SNAPSHOTTED);
    }

    @Override
    public void end() {
        sendQuietly(o -> {}, ReplicaWire.END);
    }

    @Override
    public void abort(Throwable cause) {
        sendQuietly(o -> o.writeUTF(String.valueOf(cause)), ReplicaWire.ABORT);
        fail(cause);
    }

    @Override
    public void leave() {
        leaving = true;
        sendQuietly(o -> {}, ReplicaWire.LEAVE);
        try {
            socket.shutdownOutput();
        } catch (IOException e) {
            // already closed: nothing to say goodbye on
        }
        fail(new IllegalStateException("device " + replica + " left its replica group"));
        try {
            reader.join(1000);
            socket.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            // closing what is closed
        }
    }

    private CompletableFuture<Object> newCall() {
        CompletableFuture<Object> f = new CompletableFuture<>();
        call = f;
        Throwable t = failure;
        if (t != null) {
            f.completeExceptionally(t);
        }
        return f;
    }

    private <T> T await(CompletableFuture<T> f) throws InterruptedException {
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw new IllegalStateException(
                    "the replica group in "
                            + where
                            + " aborted for device "
                            + replica
                            + ": "
                            + cause.getMessage(),
                    cause);
        }
    }

    /** Reads the group's answers until the connection ends. */
    private void read() {
        try {
            while (true) {
                int tag = in.readUnsignedByte();
                switch (tag) {
                    case ReplicaWire.INITIAL_STATE -> {
                        startStep = in.readLong();
                        call.complete(ReplicaWire.readBytes(in));
                    }
                    case ReplicaWire.AVERAGE -> call.complete(ReplicaWire.readFloats(in));
                    case ReplicaWire.CUT_TAKEN -> cutTaken.complete(in.readLong());
                    case ReplicaWire.CUT_PENDING -> pendingCut = in.readLong();
                    case ReplicaWire.OTHERS_STARVING -> othersStarving = in.readBoolean();
                    case ReplicaWire.FAILED -> fail(new IllegalStateException(in.readUTF()));
                    default -> throw new IOException("unknown replica message " + tag);
                }
            }
        } catch (IOException e) {
            if (!leaving) {
                fail(
                        new IOException(
                                "lost the connection to the trainers' replica group in "
                                        + where
                                        + ": "
                                        + (e instanceof EOFException ? "connection closed" : e),
                                e));
            }
        }
    }

    private void fail(Throwable t) {
        if (failure == null) {
            failure = t;
        }
        call.completeExceptionally(failure);
        cutTaken.completeExceptionally(failure);
    }

    /** Sends a message; a broken connection fails every call that waits. */
    private void send(ReplicaWire.Body body, int tag) {
        try {
            synchronized (out) {
                ReplicaWire.send(out, tag, body);
            }
        } catch (IOException e) {
            fail(
                    new IOException(
                            "lost the connection to the trainers' replica group in "
                                    + where
                                    + ": "
                                    + e,
                            e));
        }
    }

    /** Sends a message the group does not answer; nothing to send once the group failed. */
    private void sendQuietly(ReplicaWire.Body body, int tag) {
        if (failure == null) {
            send(body, tag);
        }
    }
}
