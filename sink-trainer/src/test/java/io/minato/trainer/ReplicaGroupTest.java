package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ReplicaGroupTest {
    private static final String THIS_TM = "this TaskManager";
    private static final String ANOTHER_TM = "another TaskManager";

    private final List<ReplicaGroup.Member> joined = new ArrayList<>();

    /** Replica 0 and replica 1 of a new group; replica 1 over TCP when in another TaskManager. */
    private record Pair(ReplicaGroup.Member a, ReplicaGroup.Member b, String localId) {}

    private Pair pair(String where) throws IOException {
        String id = id();
        Replicas here = replicas("tm-a");
        Replicas there = where.equals(THIS_TM) ? here : replicas("tm-b");
        ReplicaGroup.Member a = here.join(id, 2, 0);
        joined.add(a);
        ReplicaGroup.Member b = there.join(id, 2, 1);
        joined.add(b);
        assertThat(b instanceof RemoteMember).isEqualTo(where.equals(ANOTHER_TM));
        return new Pair(a, b, id + "@tm-a");
    }

    private static Replicas replicas(String taskManager) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        return new Replicas(
                TrainerRendezvous.inJvm(), taskManager, loopback.getHostAddress(), loopback);
    }

    /** Replica 0 last: after training its link waits for the others' goodbyes. */
    @AfterEach
    void leaveAll() {
        for (int i = joined.size() - 1; i >= 0; i--) {
            joined.get(i).leave();
        }
    }

    private static String id() {
        return "test-" + UUID.randomUUID();
    }

    private static CompletableFuture<float[]> post(
            ReplicaGroup.Member m, long step, float[] g, int n) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return m.allReduce(step, g, n);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                });
    }

    private static void start(ReplicaGroup.Member... members) throws Exception {
        CompletableFuture<?>[] all = new CompletableFuture<?>[members.length];
        for (int i = 0; i < members.length; i++) {
            ReplicaGroup.Member m = members[i];
            all[i] =
                    CompletableFuture.runAsync(
                            () -> {
                                try {
                                    m.initialState(new byte[] {(byte) m.replica()}, 0);
                                } catch (InterruptedException e) {
                                    throw new IllegalStateException(e);
                                }
                            });
        }
        CompletableFuture.allOf(all).get(10, TimeUnit.SECONDS);
    }

    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldAverageGradientsWeightedBySamplesLikeOneConcatenatedBatch(String where)
            throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        // Mean-loss gradients of a 2-sample and a 1-sample batch: the 3-sample mean is (2ga+gb)/3.
        var fa = post(a, 1, new float[] {3f, 0f}, 2);
        var fb = post(b, 1, new float[] {0f, 3f}, 1);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(2f, 1f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(2f, 1f);
    }

    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldLetAReplicaOutOfDataApplyTheOthersUpdateAndEndWhenNobodyHasData(String where)
            throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        var fa = post(a, 1, new float[] {4f}, 2);
        var fb = post(b, 1, null, 0);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(4f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(4f);

        var ea = post(a, 2, null, 0);
        var eb = post(b, 2, null, 0);
        assertThat(ea.get(10, TimeUnit.SECONDS)).isNull();
        assertThat(eb.get(10, TimeUnit.SECONDS)).isNull();
    }

    /**
     * A replica whose every sample of a batch was left out as bad input posts no samples but more
     * to come: it applies the others' update, and a step no replica had a sample for is counted by
     * every replica and ends nothing.
     */
    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldCountAStepWithoutSamplesWhileAReplicasInputGoesOn(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        var fa = post(a, 1, new float[] {4f}, 2);
        var fb = post(b, 1, ReplicaGroup.NO_SAMPLES, 0);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(4f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(4f);

        var na = post(a, 2, null, 0);
        var nb = post(b, 2, ReplicaGroup.NO_SAMPLES, 0);
        assertThat(na.get(10, TimeUnit.SECONDS)).as("a step without samples").isEmpty();
        assertThat(nb.get(10, TimeUnit.SECONDS)).isEmpty();

        var ga = post(a, 3, null, 0);
        var gb = post(b, 3, new float[] {2f}, 1);
        assertThat(ga.get(10, TimeUnit.SECONDS)).containsExactly(2f);
        assertThat(gb.get(10, TimeUnit.SECONDS)).containsExactly(2f);

        var ea = post(a, 4, null, 0);
        var eb = post(b, 4, null, 0);
        assertThat(ea.get(10, TimeUnit.SECONDS)).isNull();
        assertThat(eb.get(10, TimeUnit.SECONDS)).isNull();
    }

    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldGiveEveryReplicaTheFirstReplicasInitialStateAndStep(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        var fb = CompletableFuture.supplyAsync(() -> initial(b, new byte[] {9}, 41));
        assertThat(initial(a, new byte[] {1, 2}, 41)).containsExactly(1, 2);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(1, 2);
        assertThat(b.startStep()).isEqualTo(41);
        // The next step is 42: a replica that thinks otherwise was restored elsewhere.
        assertThatThrownBy(() -> b.allReduce(7, new float[] {1f}, 1))
                .hasMessageContaining("device 1 is at step 6 but its replicas at step 41");
    }

    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldStopReplicasRestoredFromDifferentSteps(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        var fb = CompletableFuture.supplyAsync(() -> initial(b, new byte[] {9}, 40));
        assertThatThrownBy(() -> a.initialState(new byte[] {1}, 41))
                .hasMessageContaining("replicas restored from different steps: [41, 40]");
        assertThatThrownBy(() -> fb.get(10, TimeUnit.SECONDS))
                .hasMessageContaining("replicas restored from different steps: [41, 40]");
    }

    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldHoldTheStepWhileACheckpointCutWaitsForEveryReplicasSnapshot(String where)
            throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        a.cut(5);
        await(b::cutPending); // told over the link when elsewhere
        a.snapshotted(5);
        var fa = post(a, 1, new float[] {1f}, 1);
        var fb = post(b, 1, new float[] {3f}, 1);
        await(() -> a.parked() && b.parked());
        Thread.sleep(50);
        assertThat(fa).as("held by the cut").isNotDone();
        // An older checkpoint's snapshot does not release the cut; this one's does.
        b.snapshotted(4);
        Thread.sleep(50);
        assertThat(fa).isNotDone();
        b.snapshotted(5);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(2f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(2f);
        assertThat(a.parked()).isFalse();
        assertThat(a.cutPending()).isFalse();
    }

    /**
     * A replica whose input ended still trains what it holds, and its task snapshots only once
     * training is over: a cut waits for the state it takes itself, told the checkpoint's id.
     */
    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldWaitForTheSnapshotOfAReplicaWhoseInputEnded(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        b.end();
        assertThat(b.pendingCut()).isEqualTo(-1);
        a.cut(7);
        await(() -> b.pendingCut() == 7); // told over the link when elsewhere
        var fa = post(a, 1, new float[] {1f}, 1);
        var fb = post(b, 1, new float[] {3f}, 1);
        a.snapshotted(7);
        await(() -> a.parked() && b.parked());
        Thread.sleep(50);
        assertThat(fa).as("held until the ended replica took its state").isNotDone();
        b.snapshotted(7);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(2f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(2f);
        await(() -> b.pendingCut() == -1);
    }

    /** A later checkpoint's cut replaces one that a replica never snapshotted, and says so. */
    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldTellEveryReplicaTheCheckpointOfTheLatestCut(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        a.cut(3);
        await(() -> b.pendingCut() == 3);
        a.cut(4);
        await(() -> b.pendingCut() == 4);
        a.cut(2); // older: changes nothing
        Thread.sleep(50);
        assertThat(b.pendingCut()).isEqualTo(4);
        assertThat(a.pendingCut()).isEqualTo(4);
    }

    /** Each replica learns when another one starves, and stops hearing it once that one ended. */
    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldTellTheOthersWhileAReplicaStarves(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        assertThat(a.othersStarving()).isFalse();
        assertThat(b.othersStarving()).isFalse();

        b.starving(true);
        await(a::othersStarving);
        assertThat(b.othersStarving()).as("its own starving is not another's").isFalse();
        a.starving(true);
        await(b::othersStarving);

        b.starving(false);
        await(() -> !a.othersStarving());
        assertThat(b.othersStarving()).isTrue();
        // Out of input, a replica no longer counts as starving.
        a.end();
        await(() -> !b.othersStarving());
    }

    @ParameterizedTest(name = "the second replica in {0}")
    @ValueSource(strings = {THIS_TM, ANOTHER_TM})
    void shouldWakeWaitingReplicasWhenOneLeavesBeforeTheEnd(String where) throws Exception {
        Pair p = pair(where);
        ReplicaGroup.Member a = p.a();
        ReplicaGroup.Member b = p.b();
        start(a, b);
        var fa = post(a, 1, new float[] {1f}, 1);
        await(a::parked);
        b.leave();
        assertThatThrownBy(() -> fa.get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasMessageContaining("device 1 stopped before training ended");
        a.leave();
        // Both left: the id is free for a new group.
        ReplicaGroup.join(p.localId(), 1, 0).leave();
    }

    @Test
    void shouldFailInOneLineWhenTheOtherReplicasNeverJoin() {
        ReplicaGroup.Member a = ReplicaGroup.join(id(), 2, 0, Duration.ofMillis(100));
        assertThatThrownBy(() -> a.allReduce(1, new float[] {1f}, 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(
                        "only 1 of 2 trainer replicas joined within 0.1 s: a trainer subtask did"
                                + " not start or could not reach replica 0's TaskManager");
    }

    @Test
    void shouldAbortTheGroupAtOnceWhenAReplicasTaskManagerIsLost() throws Exception {
        String id = id();
        Replicas here = replicas("tm-a");
        ReplicaGroup.Member a = here.join(id, 2, 0);
        joined.add(a);
        TrainerRendezvous.Root root = TrainerRendezvous.inJvm().find(id, Duration.ofSeconds(10));
        // Replica 1's TaskManager says hello, then dies (kill -9: its socket closes, no goodbye).
        try (Socket lost = new Socket(InetAddress.getLoopbackAddress(), root.port());
                DataOutputStream out = new DataOutputStream(lost.getOutputStream())) {
            out.writeByte(ReplicaWire.HELLO);
            out.writeUTF(id);
            out.writeInt(2);
            out.writeInt(1);
            out.flush();
        }
        assertThatThrownBy(() -> a.allReduce(1, new float[] {1f}, 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lost the trainer of device 1 in another TaskManager");
    }

    @Test
    void shouldFailAReplicaAtOnceWhenReplicaZerosTaskManagerIsLost() throws Exception {
        String id = id();
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            TrainerRendezvous.inJvm()
                    .announce(
                            id,
                            new TrainerRendezvous.Root("tm-a", "127.0.0.1", server.getLocalPort()));
            ReplicaGroup.Member b = replicas("tm-b").join(id, 2, 1);
            joined.add(b);
            try (Socket s = server.accept();
                    DataInputStream in = new DataInputStream(s.getInputStream())) {
                assertThat(in.readUnsignedByte()).isEqualTo(ReplicaWire.HELLO);
            } // replica 0's TaskManager dies here
            assertThatThrownBy(() -> b.initialState(new byte[] {1}, 0))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("lost the connection to the trainers' replica group");
        }
    }

    @Test
    void shouldRefuseAConnectionForAnotherGroupWithoutJoiningIt() throws Exception {
        String id = id();
        ReplicaGroup.Member a = replicas("tm-a").join(id, 2, 0);
        joined.add(a);
        TrainerRendezvous.Root root = TrainerRendezvous.inJvm().find(id, Duration.ofSeconds(10));
        ReplicaGroup.Member stranger =
                RemoteMember.connect(
                        new java.net.InetSocketAddress("127.0.0.1", root.port()), "other", 2, 1);
        joined.add(stranger);
        assertThatThrownBy(() -> stranger.initialState(new byte[] {1}, 0))
                .hasMessageContaining("came to the link of group " + id);
    }

    @Test
    void shouldRefuseAGradientWithoutSamplesAndTheSameReplicaTwice() {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        assertThatThrownBy(() -> a.allReduce(1, new float[] {1f}, 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ReplicaGroup.join(id, 2, 0))
                .hasMessageContaining("joined group " + id + " twice");
        assertThatThrownBy(() -> ReplicaGroup.join(id, 3, 1)).hasMessageContaining("not 3");
    }

    private static byte[] initial(ReplicaGroup.Member m, byte[] mine, long step) {
        try {
            return m.initialState(mine, step);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void await(java.util.function.BooleanSupplier condition)
            throws InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("condition not met within 10 s");
            }
            Thread.sleep(1);
        }
    }
}
