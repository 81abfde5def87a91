package io.minato.trainer;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.Serializable;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.jobgraph.tasks.TaskOperatorEventGateway;
import org.apache.flink.runtime.operators.coordination.CoordinationRequest;
import org.apache.flink.runtime.operators.coordination.CoordinationResponse;
import org.apache.flink.streaming.api.operators.collect.CollectCoordinationResponse;
import org.apache.flink.util.SerializedValue;

/**
 * Where the trainers of one run attempt meet, wherever Flink put them: replica 0 says where its
 * replica group is and the other devices ask, each device on Flink's GPUs claims one of its
 * TaskManager's, and each device says when it closed after its last step, so that the run's end is
 * run once. Through the trainers' coordinator in the JobManager ({@link #through}); in a JVM of its
 * own where there is none (an operator test harness).
 */
interface TrainerRendezvous {

    /** Where replica 0's group is: its TaskManager, and the host and port of its link. */
    record Root(String taskManager, String host, int port) implements Serializable {}

    /** Says where group {@code group} is. */
    void announce(String group, Root root) throws IOException;

    /** Where group {@code group} is, once replica 0 said so; fails after {@code timeout}. */
    Root find(String group, Duration timeout) throws IOException;

    /**
     * Device {@code device} of the {@code devices} devices of {@code group} closed after its last
     * step. Saying it again changes nothing (a request whose answer was lost is asked again).
     *
     * @return whether it was the last of them to say so
     */
    boolean ended(String group, int device, int devices) throws IOException;

    /**
     * The position among the {@code gpus} GPUs of TaskManager {@code taskManager} that device
     * {@code device} of {@code group} holds ({@link GpuClaims}); -1 when the group's other devices
     * there hold all of them. Asking again gives the same position.
     */
    int claimGpu(String group, String taskManager, int device, int gpus) throws IOException;

    /** A rendezvous in this JVM only. */
    static TrainerRendezvous inJvm() {
        return InJvm.INSTANCE;
    }

    /** The rendezvous at the coordinator of operator {@code operator}, through {@code gateway}. */
    static TrainerRendezvous through(TaskOperatorEventGateway gateway, OperatorID operator) {
        return new AtCoordinator(gateway, operator);
    }

    /** For a harness's operators, all in this JVM. */
    final class InJvm implements TrainerRendezvous {
        private static final InJvm INSTANCE = new InJvm();
        private final ConcurrentHashMap<String, CompletableFuture<Root>> roots =
                new ConcurrentHashMap<>();
        private final ConcurrentHashMap<String, Endings> ended = new ConcurrentHashMap<>();
        private final ConcurrentHashMap<String, GpuClaims> gpus = new ConcurrentHashMap<>();

        @Override
        public void announce(String group, Root root) {
            roots.computeIfAbsent(group, g -> new CompletableFuture<>()).complete(root);
        }

        @Override
        public Root find(String group, Duration timeout) throws IOException {
            CompletableFuture<Root> f =
                    roots.computeIfAbsent(group, g -> new CompletableFuture<>());
            try {
                return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while looking for replica 0");
            } catch (ExecutionException | TimeoutException e) {
                throw notFound(group, timeout, e);
            }
        }

        @Override
        public boolean ended(String group, int device, int devices) {
            return ended.computeIfAbsent(group, g -> new Endings()).ended(device, devices);
        }

        @Override
        public int claimGpu(String group, String taskManager, int device, int gpus) {
            return this.gpus
                    .computeIfAbsent(group, g -> new GpuClaims())
                    .claim(taskManager, device, gpus);
        }
    }

    /** Requests to the trainers' coordinator ({@link TrainerCoordinator}). */
    final class AtCoordinator implements TrainerRendezvous {
        /** One RPC's wait; a longer wait for replica 0 asks again. */
        private static final Duration ASK = Duration.ofSeconds(5);

        /**
         * How long a device keeps making a request that may be made again (it ended, it claims a
         * GPU) while the JobManager does not answer.
         */
        private static final Duration RETRY_TIMEOUT = Duration.ofSeconds(30);

        private final TaskOperatorEventGateway gateway;
        private final OperatorID operator;

        AtCoordinator(TaskOperatorEventGateway gateway, OperatorID operator) {
            this.gateway = gateway;
            this.operator = operator;
        }

        @Override
        public void announce(String group, Root root) throws IOException {
            ask(new Announce(group, root), ASK);
        }

        @Override
        public Root find(String group, Duration timeout) throws IOException {
            long deadline = System.nanoTime() + timeout.toNanos();
            IOException last = null;
            while (System.nanoTime() < deadline) {
                try {
                    return Answers.root(ask(new Find(group), ASK));
                } catch (IOException e) {
                    if (!(e.getCause() instanceof TimeoutException)) {
                        throw e;
                    }
                    last = e; // replica 0 is not there yet (or the RPC's own timeout): ask again
                }
            }
            throw notFound(group, timeout, last);
        }

        @Override
        public boolean ended(String group, int device, int devices) throws IOException {
            // Asking again is safe: the coordinator counts each device once.
            return Answers.last(askUntilAnswered(new Ended(group, device, devices)));
        }

        @Override
        public int claimGpu(String group, String taskManager, int device, int gpus)
                throws IOException {
            // Asking again is safe: the coordinator gives a device the same position.
            return Answers.position(
                    askUntilAnswered(new ClaimGpu(group, taskManager, device, gpus)));
        }

        /** Asks again while the JobManager does not answer, for {@link #RETRY_TIMEOUT}. */
        private CoordinationResponse askUntilAnswered(CoordinationRequest request)
                throws IOException {
            long deadline = System.nanoTime() + RETRY_TIMEOUT.toNanos();
            while (true) {
                try {
                    return ask(request, ASK);
                } catch (IOException e) {
                    if (!(e.getCause() instanceof TimeoutException)
                            || System.nanoTime() > deadline) {
                        throw e;
                    }
                }
            }
        }

        private CoordinationResponse ask(CoordinationRequest request, Duration wait)
                throws IOException {
            try {
                return gateway.sendRequestToCoordinator(operator, new SerializedValue<>(request))
                        .get(wait.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException(
                        "interrupted while asking the trainers' coordinator");
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof TimeoutException) {
                    throw new IOException("no answer from the trainers' coordinator", cause);
                }
                throw new IOException("the trainers' coordinator failed: " + cause, cause);
            } catch (TimeoutException e) {
                throw new IOException("no answer from the trainers' coordinator", e);
            }
        }
    }

    private static IOException notFound(String group, Duration timeout, Exception cause) {
        return new IOException(
                "replica 0 of the trainers of "
                        + group
                        + " did not say where its group is within "
                        + timeout.toSeconds()
                        + " s: did its trainer subtask start?",
                cause);
    }

    /** Replica 0 says where group {@code group} is. */
    record Announce(String group, Root root) implements CoordinationRequest {}

    /** Where is group {@code group}? Answered once replica 0 said so. */
    record Find(String group) implements CoordinationRequest {}

    /** Device {@code device} of {@code group}'s {@code devices} closed after its last step. */
    record Ended(String group, int device, int devices) implements CoordinationRequest {}

    /** Device {@code device} of {@code group} claims one of {@code taskManager}'s {@code gpus}. */
    record ClaimGpu(String group, String taskManager, int device, int gpus)
            implements CoordinationRequest {}

    /**
     * The devices of one run attempt that closed after their last step; the one that completed the
     * set is the last, however often each says so.
     */
    final class Endings {
        private final Set<Integer> devices = new HashSet<>();
        private int last = -1;

        synchronized boolean ended(int device, int count) {
            devices.add(device);
            if (last < 0 && devices.size() == count) {
                last = device;
            }
            return last == device;
        }
    }

    /**
     * The coordinator's answers. They cross from the JobManager to a TaskManager by Flink's RPC,
     * which reads them with Flink's own class loader, not the job's: so they travel as a Flink
     * class holding strings (as Flink CDC's coordinators answer), not as classes of this job.
     */
    final class Answers {
        private static final String ROOT = "root";
        private static final String ENDED = "ended";
        private static final String DONE = "done";
        private static final String GPU = "gpu";

        private Answers() {}

        static CoordinationResponse of(Root root) {
            return new CollectCoordinationResponse(
                    ROOT, root.port(), List.of(bytes(root.taskManager()), bytes(root.host())));
        }

        static CoordinationResponse ended(boolean last) {
            return new CollectCoordinationResponse(ENDED, last ? 1 : 0, List.of());
        }

        static CoordinationResponse done() {
            return new CollectCoordinationResponse(DONE, 0, List.of());
        }

        static CoordinationResponse gpu(int position) {
            return new CollectCoordinationResponse(GPU, position, List.of());
        }

        static Root root(CoordinationResponse response) throws IOException {
            CollectCoordinationResponse r = expect(response, ROOT);
            List<String> names = r.getResults(StringSerializer.INSTANCE);
            return new Root(names.get(0), names.get(1), (int) r.getLastCheckpointedOffset());
        }

        static boolean last(CoordinationResponse response) throws IOException {
            return expect(response, ENDED).getLastCheckpointedOffset() == 1;
        }

        static int position(CoordinationResponse response) throws IOException {
            return (int) expect(response, GPU).getLastCheckpointedOffset();
        }

        private static CollectCoordinationResponse expect(
                CoordinationResponse response, String kind) throws IOException {
            if (response instanceof CollectCoordinationResponse r && kind.equals(r.getVersion())) {
                return r;
            }
            throw new IOException(
                    "the trainers' coordinator answered " + response + " to a " + kind);
        }

        private static byte[] bytes(String s) {
            DataOutputSerializer out = new DataOutputSerializer(s.length() + 8);
            try {
                StringSerializer.INSTANCE.serialize(s, out);
            } catch (IOException e) {
                throw new IllegalStateException(e); // an in-memory buffer does not fail
            }
            return out.getCopyOfBuffer();
        }
    }
}
