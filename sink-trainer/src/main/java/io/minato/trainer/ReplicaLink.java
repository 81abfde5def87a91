package io.minato.trainer;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The way into a {@link ReplicaGroup} for the replicas of other TaskManagers: a server socket in
 * replica 0's TaskManager. Each connection is one replica ({@link RemoteMember}), whose calls the
 * link makes on the group as that replica's own member. A connection that breaks before its replica
 * left aborts the group, so the job fails over at once instead of waiting for a step that cannot
 * come.
 */
final class ReplicaLink implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaLink.class);
    private static final int BUFFER_BYTES = 1 << 16;

    private final String group;
    private final String localId;
    private final int size;
    private final ServerSocket server;
    private final Thread acceptor;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /**
     * @param group the group's name as the other TaskManagers' replicas give it (job and attempt)
     * @param localId the group's id in this JVM ({@link ReplicaGroup#join})
     */
    private ReplicaLink(String group, String localId, int size, ServerSocket server) {
        this.group = group;
        this.localId = localId;
        this.size = size;
        this.server = server;
        this.acceptor = new Thread(this::accept, "replica-link-" + group);
        acceptor.setDaemon(true);
    }

    /** Opens the way into group {@code localId} on a free port of {@code bind}. */
    static ReplicaLink serve(String group, String localId, int size, InetAddress bind)
            throws IOException {
        ServerSocket server = new ServerSocket(0, size, bind);
        ReplicaLink link = new ReplicaLink(group, localId, size, server);
        link.acceptor.start();
        return link;
    }

    int port() {
        return server.getLocalPort();
    }

    /**
     * Closes the link; {@code graceful}: after every connected replica left (training ended for
     * all, and each must still hear so), waiting at most {@code timeout}.
     */
    void close(boolean graceful, Duration timeout) {
        if (graceful) {
            long deadline = System.nanoTime() + timeout.toNanos();
            synchronized (connections) {
                while (!connections.isEmpty() && System.nanoTime() < deadline) {
                    try {
                        connections.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
        }
        close();
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            LOG.debug("closing the replica link of {}", group, e);
        }
        for (Connection c : connections) {
            c.closeSocket();
        }
    }

    private void accept() {
        while (!closed) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("The replica link of {} stopped accepting", group, e);
                }
                return;
            }
            Connection c = new Connection(socket);
            connections.add(c);
            Thread t = new Thread(c::serve, "replica-link-" + group + "-in");
            t.setDaemon(true);
            t.start();
        }
    }

    /** One remote replica. */
    private final class Connection {
        private final Socket socket;
        // Answers in order, never written under the group's lock (cut watchers run under it).
        private final ExecutorService sender;
        // The calls that wait for the other replicas: initial state and all-reduce.
        private final ExecutorService steps;
        private DataOutputStream out;
        private ReplicaGroup.LocalMember member;
        private int replica = -1;
        private volatile boolean left;
        // What the remote replica was last told (it starts believing no cut and no one starving).
        private long toldPendingCut = -1;
        private boolean toldOthersStarving;

        Connection(Socket socket) {
            this.socket = socket;
            this.sender = Executors.newSingleThreadExecutor(daemon("replica-link-out"));
            this.steps = Executors.newSingleThreadExecutor(daemon("replica-link-step"));
        }

        void serve() {
            ReplicaGroup.GroupWatcher watcher = this::groupChanged;
            try {
                socket.setTcpNoDelay(true);
                DataInputStream in =
                        new DataInputStream(
                                new BufferedInputStream(socket.getInputStream(), BUFFER_BYTES));
                out =
                        new DataOutputStream(
                                new BufferedOutputStream(socket.getOutputStream(), BUFFER_BYTES));
                if (!hello(in)) {
                    return;
                }
                member.watch(watcher);
                while (!left) {
                    int tag = in.readUnsignedByte();
                    switch (tag) {
                        case ReplicaWire.INITIAL -> {
                            long step = in.readLong();
                            steps.execute(() -> initialState(step));
                        }
                        case ReplicaWire.REDUCE -> {
                            long step = in.readLong();
                            int samples = in.readInt();
                            float[] gradient = ReplicaWire.readFloats(in);
                            steps.execute(() -> allReduce(step, gradient, samples));
                        }
                        case ReplicaWire.CUT -> {
                            long taken = member.cutAt(in.readLong());
                            send(o -> o.writeLong(taken), ReplicaWire.CUT_TAKEN);
                        }
                        case ReplicaWire.SNAPSHOTTED -> member.snapshotted(in.readLong());
                        case ReplicaWire.STARVING -> member.starving(in.readBoolean());
                        case ReplicaWire.END -> member.end();
                        case ReplicaWire.ABORT ->
                                member.abort(
                                        new IllegalStateException(
                                                "device " + replica + ": " + in.readUTF()));
                        case ReplicaWire.LEAVE -> {
                            left = true;
                            member.leave();
                        }
                        default -> throw new IOException("unknown replica message " + tag);
                    }
                }
            } catch (IOException | RuntimeException e) {
                if (member != null && !left) {
                    member.abort(
                            new IOException(
                                    "lost the trainer of device "
                                            + replica
                                            + " in another TaskManager ("
                                            + socket.getRemoteSocketAddress()
                                            + "): "
                                            + (e instanceof EOFException ? "connection closed" : e),
                                    e));
                }
            } finally {
                if (member != null) {
                    member.unwatch(watcher);
                    if (!left) {
                        member.leave();
                    }
                }
                steps.shutdownNow();
                sender.shutdown();
                try {
                    sender.awaitTermination(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                closeSocket();
                synchronized (connections) {
                    connections.remove(this);
                    connections.notifyAll();
                }
            }
        }

        /** Reads the replica's greeting and joins it to the group; false if it is not one. */
        private boolean hello(DataInputStream in) throws IOException {
            if (in.readUnsignedByte() != ReplicaWire.HELLO) {
                throw new IOException("a replica link connection that did not say hello");
            }
            String theirs = in.readUTF();
            int theirSize = in.readInt();
            int r = in.readInt();
            if (!theirs.equals(group) || theirSize != size || r <= 0 || r >= size) {
                String why =
                        "replica "
                                + r
                                + " of "
                                + theirSize
                                + " in group "
                                + theirs
                                + " came to the link of group "
                                + group
                                + " of "
                                + size;
                send(o -> o.writeUTF(why), ReplicaWire.FAILED);
                LOG.warn("Refused a replica link connection: {}", why);
                return false;
            }
            replica = r;
            try {
                member = ReplicaGroup.join(localId, size, r, ReplicaGroup.JOIN_TIMEOUT);
            } catch (RuntimeException e) {
                send(o -> o.writeUTF(String.valueOf(e.getMessage())), ReplicaWire.FAILED);
                throw e;
            }
            return true;
        }

        /** A remote replica is never replica 0, whose state alone counts: it sends none. */
        private void initialState(long step) {
            try {
                byte[] start = member.initialState(null, step);
                long from = member.startStep();
                send(
                        o -> {
                            o.writeLong(from);
                            ReplicaWire.writeBytes(o, start);
                        },
                        ReplicaWire.INITIAL_STATE);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                failed(e);
            }
        }

        private void allReduce(long step, float[] gradient, int samples) {
            try {
                float[] average = member.allReduce(step, gradient, samples);
                send(o -> ReplicaWire.writeFloats(o, average), ReplicaWire.AVERAGE);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                failed(e);
            }
        }

        private void failed(RuntimeException e) {
            String message = String.valueOf(e.getMessage());
            send(o -> o.writeUTF(message), ReplicaWire.FAILED);
        }

        /** Under the group's lock: tells the remote replica what changed, and only that. */
        private void groupChanged(long pendingCut, boolean othersStarving) {
            if (pendingCut != toldPendingCut) {
                toldPendingCut = pendingCut;
                send(o -> o.writeLong(pendingCut), ReplicaWire.CUT_PENDING);
            }
            if (othersStarving != toldOthersStarving) {
                toldOthersStarving = othersStarving;
                send(o -> o.writeBoolean(othersStarving), ReplicaWire.OTHERS_STARVING);
            }
        }

        /** Writes message {@code tag} with {@code body} on the sender thread. */
        private void send(ReplicaWire.Body body, int tag) {
            try {
                sender.execute(
                        () -> {
                            try {
                                ReplicaWire.send(out, tag, body);
                            } catch (IOException e) {
                                // The reader sees the broken connection and aborts the group.
                                LOG.debug("replica link of {}: cannot answer", group, e);
                            }
                        });
            } catch (RejectedExecutionException e) {
                LOG.debug("replica link of {}: closed before answering", group);
            }
        }

        void closeSocket() {
            try {
                socket.close();
            } catch (IOException e) {
                LOG.debug("closing a replica link connection", e);
            }
        }
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
