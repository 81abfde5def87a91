package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class ReplicaGroupTest {

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

    @Test
    void shouldAverageGradientsWeightedBySamplesLikeOneConcatenatedBatch() throws Exception {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
        start(a, b);
        // Mean-loss gradients of a 2-sample and a 1-sample batch: the 3-sample mean is (2ga+gb)/3.
        var fa = post(a, 1, new float[] {3f, 0f}, 2);
        var fb = post(b, 1, new float[] {0f, 3f}, 1);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(2f, 1f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).isSameAs(fa.get());
    }

    @Test
    void shouldLetAReplicaOutOfDataApplyTheOthersUpdateAndEndWhenNobodyHasData() throws Exception {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
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

    @Test
    void shouldGiveEveryReplicaTheFirstReplicasInitialStateAndStep() throws Exception {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
        var fb = CompletableFuture.supplyAsync(() -> initial(b, new byte[] {9}, 41));
        assertThat(initial(a, new byte[] {1, 2}, 41)).containsExactly(1, 2);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(1, 2);
        assertThat(b.startStep()).isEqualTo(41);
        // The next step is 42: a replica that thinks otherwise was restored elsewhere.
        assertThatThrownBy(() -> b.allReduce(7, new float[] {1f}, 1))
                .hasMessageContaining("device 1 is at step 6 but its replicas at step 41");
    }

    @Test
    void shouldStopReplicasRestoredFromDifferentSteps() {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
        var fb = CompletableFuture.supplyAsync(() -> initial(b, new byte[] {9}, 40));
        assertThatThrownBy(() -> a.initialState(new byte[] {1}, 41))
                .hasMessageContaining("replicas restored from different steps: [41, 40]");
        assertThatThrownBy(() -> fb.get(10, TimeUnit.SECONDS))
                .hasMessageContaining("replicas restored from different steps: [41, 40]");
    }

    @Test
    void shouldHoldTheStepWhileACheckpointCutWaitsForEveryReplicasSnapshot() throws Exception {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
        start(a, b);
        a.cut(5);
        assertThat(b.cutPending()).isTrue();
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

    @Test
    void shouldNotWaitForTheSnapshotOfAReplicaWhoseInputEnded() throws Exception {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
        start(a, b);
        b.end();
        a.cut(1);
        var fa = post(a, 1, new float[] {1f}, 1);
        var fb = post(b, 1, null, 0);
        a.snapshotted(1);
        assertThat(fa.get(10, TimeUnit.SECONDS)).containsExactly(1f);
        assertThat(fb.get(10, TimeUnit.SECONDS)).containsExactly(1f);
    }

    @Test
    void shouldWakeWaitingReplicasWhenOneLeavesBeforeTheEnd() throws Exception {
        String id = id();
        ReplicaGroup.Member a = ReplicaGroup.join(id, 2, 0);
        ReplicaGroup.Member b = ReplicaGroup.join(id, 2, 1);
        start(a, b);
        var fa = post(a, 1, new float[] {1f}, 1);
        await(a::parked);
        b.leave();
        assertThatThrownBy(() -> fa.get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasMessageContaining("device 1 stopped before training ended");
        a.leave();
        // Both left: the id is free for a new group.
        ReplicaGroup.join(id, 1, 0).leave();
    }

    @Test
    void shouldFailInOneLineWhenTheOtherReplicasNeverJoinThisJvm() {
        ReplicaGroup.Member a = ReplicaGroup.join(id(), 2, 0, Duration.ofMillis(100));
        assertThatThrownBy(() -> a.allReduce(1, new float[] {1f}, 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(
                        "only 1 of 2 trainer replicas joined within 0.1 s: synchronous data"
                                + " parallelism needs every trainer subtask in one TaskManager"
                                + " (taskmanager.numberOfTaskSlots >= devices)");
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
