package io.minato.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.workload.kits19.Preparation;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SampleHandoffTest {
    private static final Shape3 SHAPE = Shape3.cube(4); // 320 bytes

    private static SampleTask task(long index) {
        return new SampleTask(7, 0, index, 1);
    }

    private static Patch patch() {
        int n = (int) SHAPE.voxels();
        return new Patch(SHAPE, new float[n], new byte[n]);
    }

    @Test
    void shouldHandTheSamePatchToOneTakerOnly() {
        SampleHandoff h = new SampleHandoff(1 << 20);
        try (var r = h.reserve(4)) {
            Patch p = patch();
            assertThat(h.offer(task(1), p)).isTrue();
            assertThat(h.take(task(2))).isNull();
            assertThat(h.take(task(1))).isSameAs(p);
            assertThat(h.take(task(1))).as("taken already: prepared again downstream").isNull();
            assertThat(h.missed()).isEqualTo(2);
            assertThat(h.bytes()).isZero();
        }
    }

    @Test
    void shouldKeepBothCopiesOfASampleParkedTwice() {
        SampleHandoff h = new SampleHandoff(1 << 20);
        try (var r = h.reserve(4)) {
            Patch a = patch();
            Patch b = patch();
            h.offer(task(1), a);
            h.offer(task(1), b);
            assertThat(h.take(task(1))).isSameAs(a);
            assertThat(h.take(task(1))).isSameAs(b);
        }
    }

    /**
     * A job that failed leaves what its senders parked and nobody took. Once none of its operators
     * runs, the store is emptied: the next job of the JVM (a session cluster's) finds room at once
     * instead of waiting for room at each sample until the entries age out.
     */
    @Test
    void shouldDropWhatIsParkedOnceNoOperatorRunsAndGiveTheNextJobRoomAtOnce() {
        SampleHandoff h = new SampleHandoff(1 << 20);
        var failed = h.reserve(2);
        var receiver =
                h.receiving(
                        new SampleHandoff.Receiver("failed-job", SampleHandoff.TRAINER, 0, "tm-1"));
        h.offer(task(1), patch());
        h.offer(task(2), patch());
        receiver.close();
        assertThat(h.parked()).as("a sender still runs").isEqualTo(2);
        failed.close();
        assertThat(h.parked()).isZero();
        assertThat(h.orphansDropped()).isEqualTo(2);

        try (var next = h.reserve(2)) {
            // A full store would have made each wait, then send its bytes inline (false).
            assertThat(h.offer(task(3), patch())).isTrue();
            assertThat(h.offer(task(4), patch())).isTrue();
        }
    }

    /**
     * A sender waits for room in slices (its task runs its mail between them): a slice ends without
     * room while the store is full, and with room as soon as a receiver takes a sample. A patch
     * that is never parked (no reservation) never waits.
     */
    @Test
    void shouldWaitForRoomInSlicesAndSayWhenThereIsRoom() throws Exception {
        SampleHandoff h = new SampleHandoff(1 << 20);
        long bytes = patch().bytes();
        assertThat(h.awaitRoom(bytes, 1)).as("nothing reserved: sent inline, no wait").isTrue();
        try (var r = h.reserve(1)) {
            assertThat(h.awaitRoom(bytes, 1)).isTrue();
            assertThat(h.offer(task(1), patch())).isTrue();
            long start = System.nanoTime();
            assertThat(h.awaitRoom(bytes, 20)).as("full").isFalse();
            assertThat(System.nanoTime() - start)
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(20));
            CompletableFuture<Boolean> waiting =
                    CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    return h.awaitRoom(bytes, 60_000);
                                } catch (InterruptedException e) {
                                    throw new IllegalStateException(e);
                                }
                            });
            assertThat(h.take(task(1))).isNotNull();
            assertThat(waiting.get(30, TimeUnit.SECONDS)).as("room once taken").isTrue();
        }
    }

    /** A task's unfinished state and its prepared patch are different entries. */
    @Test
    void shouldKeepATasksUnfinishedStateApartFromItsPatch() {
        SampleHandoff h = new SampleHandoff(1 << 20);
        try (var r = h.reserve(4)) {
            Preparation unfinished = Preparation.start(task(1).key());
            Patch p = patch();
            assertThat(h.offer(task(1), unfinished)).isTrue();
            assertThat(h.take(task(1))).as("no patch parked yet").isNull();
            assertThat(h.offer(task(1), p)).isTrue();
            assertThat(h.bytes()).isEqualTo(unfinished.heldBytes() + 5 * SHAPE.voxels());
            assertThat(h.takeUnfinished(task(1))).isSameAs(unfinished);
            assertThat(h.takeUnfinished(task(1))).isNull();
            assertThat(h.take(task(1))).isSameAs(p);
            assertThat(h.parked()).isZero();
        }
    }

    /**
     * The slow path takes unfinished states and parks its results: a store full of unfinished
     * states must neither keep its results out nor make a fast worker wait.
     */
    @Test
    void shouldNeverLetUnfinishedStatesBlockResultsNorWaitForRoom() throws Exception {
        SampleHandoff h = new SampleHandoff(1 << 20);
        try (var r = h.reserve(2)) {
            assertThat(h.offer(task(1), Preparation.start(task(1).key()))).isTrue();
            assertThat(h.offer(task(2), Preparation.start(task(2).key()))).isTrue();
            long t = System.nanoTime();
            assertThat(h.offer(task(3), Preparation.start(task(3).key())))
                    .as("no room: inline at once")
                    .isFalse();
            assertThat(System.nanoTime() - t).isLessThan(TimeUnit.SECONDS.toNanos(1));
            assertThat(h.offer(task(4), patch())).as("results still find room").isTrue();
            assertThat(h.offer(task(5), patch())).isTrue();
            assertThat(h.parked()).isEqualTo(4);
            assertThat(h.takeUnfinished(task(1))).isNotNull();
            assertThat(h.offer(task(3), Preparation.start(task(3).key()))).isTrue();
        }
    }

    /** Identities are too small for Flink's buffers to hold the workers back: the store does. */
    @Test
    void shouldHoldASenderBackUntilATakerMakesRoom() throws Exception {
        SampleHandoff h = new SampleHandoff(1 << 20);
        try (var r = h.reserve(2)) {
            assertThat(h.offer(task(1), patch())).isTrue();
            assertThat(h.offer(task(2), patch())).isTrue();
            CompletableFuture<Boolean> third =
                    CompletableFuture.supplyAsync(() -> h.offer(task(3), patch()));
            Thread.sleep(100);
            assertThat(third).as("waits while the reserved prefetch is parked").isNotDone();
            h.take(task(1));
            assertThat(third.get(5, TimeUnit.SECONDS)).isTrue();
            assertThat(h.parked()).isEqualTo(2);
        }
    }

    /**
     * Every consumer paused for minutes (an evaluation pass): nothing is taken, and what is parked
     * is alive. It stays, and a sender waits for room, however long the pause; dropping it made the
     * trainers prepare each sample again.
     */
    @Test
    void shouldKeepWhatIsParkedThroughAPauseWhereNothingIsTaken() {
        AtomicLong now = new AtomicLong();
        SampleHandoff h = new SampleHandoff(1 << 20, now::get);
        try (var r = h.reserve(2)) {
            h.offer(task(1), patch());
            h.offer(task(2), patch());
            now.addAndGet(SampleHandoff.ORPHAN_AGE_NANOS * 3); // a pause of three orphan ages
            assertThat(h.offerWithin(task(3), patch(), 20)).as("no room yet").isFalse();
            assertThat(h.orphansDropped()).isZero();
            assertThat(h.take(task(1))).isNotNull();
            assertThat(h.take(task(2))).isNotNull();
        }
    }

    /**
     * An entry that receivers went on not taking for the orphan age while they took others (a job
     * that ended left it in a session cluster's JVM) is dropped when room is needed.
     */
    @Test
    void shouldDropAnEntryLeftUntakenWhileOthersWereTakenForTheOrphanAge() {
        AtomicLong now = new AtomicLong();
        SampleHandoff h = new SampleHandoff(1 << 20, now::get);
        try (var r = h.reserve(2)) {
            h.offer(task(1), patch()); // never taken
            for (int i = 2; i < 10; i++) {
                h.offer(task(i), patch());
                now.addAndGet(SampleHandoff.ORPHAN_AGE_NANOS / 4);
                assertThat(h.take(task(i))).isNotNull();
            }
            h.offer(task(10), patch()); // the store is full again
            assertThat(h.offerWithin(task(11), patch(), 20)).isTrue();
            assertThat(h.orphansDropped()).isEqualTo(1);
            assertThat(h.take(task(1))).isNull();
        }
    }

    @Test
    void shouldSendInlineAPatchLargerThanTheWholeStore() {
        SampleHandoff h = new SampleHandoff(100);
        try (var r = h.reserve(2)) {
            assertThat(h.offer(task(1), patch())).isFalse();
            assertThat(h.sentInline()).isEqualTo(1);
        }
    }

    @Test
    void shouldDropWhatAFailedAttemptLeftWhenAJobRestores() throws Exception {
        SampleHandoff h = new SampleHandoff(1 << 20);
        try (var r = h.reserve(1)) {
            h.offer(task(1), patch());
            CompletableFuture<Boolean> next =
                    CompletableFuture.supplyAsync(() -> h.offer(task(2), patch()));
            Thread.sleep(50);
            h.dropAll();
            assertThat(next.get(5, TimeUnit.SECONDS)).isTrue();
            assertThat(h.take(task(1))).isNull();
            assertThat(h.orphansDropped()).isEqualTo(1);
        }
    }

    /**
     * A receiver is here only in its own TaskManager (several share a JVM in a MiniCluster), while
     * it is open, and for as long as any of its registrations is.
     */
    @Test
    void shouldKnowAReceiverHereOnlyInItsOwnTaskManagerWhileItIsOpen() {
        SampleHandoff h = new SampleHandoff(1 << 20);
        var here = new SampleHandoff.Receiver("job", SampleHandoff.BATCHER, 1, "tm-1");
        var elsewhere = new SampleHandoff.Receiver("job", SampleHandoff.BATCHER, 1, "tm-2");
        var otherDevice = new SampleHandoff.Receiver("job", SampleHandoff.BATCHER, 0, "tm-1");
        assertThat(h.receivesHere(here)).as("not open yet").isFalse();
        var first = h.receiving(here);
        var second = h.receiving(here); // a new attempt opened before the old one closed
        assertThat(h.receivesHere(here)).isTrue();
        assertThat(h.receivesHere(elsewhere)).isFalse();
        assertThat(h.receivesHere(otherDevice)).isFalse();
        first.close();
        first.close(); // closing twice takes one registration only
        assertThat(h.receivesHere(here)).isTrue();
        second.close();
        assertThat(h.receivesHere(here)).isFalse();
    }
}
