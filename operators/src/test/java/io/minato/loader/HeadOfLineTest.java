package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The head-of-line clock, and when an in-order loader's batches run it. */
class HeadOfLineTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final HeadOfLine clock = new HeadOfLine(now::get);

    @Test
    void shouldRunWhileAnyLoaderHoldsABatchBackAndNotCountOverlapsTwice() {
        Object a = new Object();
        Object b = new Object();
        clock.hold(a, true);
        now.addAndGet(100);
        clock.hold(b, true); // overlapping: still one clock
        now.addAndGet(50);
        clock.hold(a, false);
        now.addAndGet(30);
        assertThat(clock.heldNanos(now.get())).isEqualTo(180);
        clock.hold(b, false);
        now.addAndGet(1_000);
        assertThat(clock.heldNanos(now.get())).as("stopped").isEqualTo(180);
        clock.hold(a, false); // releasing twice changes nothing
        assertThat(clock.heldNanos(now.get())).isEqualTo(180);
    }

    @Test
    void shouldHoldOnlyWhileALaterBatchIsReadyAndTheHeadIsNot() {
        InOrderBatches batches = new InOrderBatches(2, 5, clock);
        batches.samplePrepared(5);
        assertThat(batches.holding()).as("head half done, nothing behind").isFalse();
        batches.samplePrepared(6);
        assertThat(batches.holding()).as("batch 6 half done").isFalse();
        batches.samplePrepared(6);
        assertThat(batches.holding()).as("batch 6 ready behind batch 5").isTrue();
        now.addAndGet(40);
        batches.samplePrepared(5);
        assertThat(batches.holding()).as("the head is ready too").isFalse();
        assertThat(clock.heldNanos(now.get())).isEqualTo(40);

        batches.handedOut(5);
        batches.samplePrepared(8);
        batches.samplePrepared(8);
        assertThat(batches.holding()).as("batch 6 is the head and ready").isFalse();
        batches.handedOut(6);
        assertThat(batches.holding()).as("batch 8 ready behind batch 7").isTrue();
        now.addAndGet(10);
        batches.samplePrepared(4); // a batch already handed out: ignored
        batches.close();
        assertThat(batches.holding()).isFalse();
        now.addAndGet(500);
        assertThat(clock.heldNanos(now.get())).isEqualTo(50);
    }

    @Test
    void shouldGiveEachJobAttemptItsOwnClock() {
        assertThat(HeadOfLine.of("job/0")).isSameAs(HeadOfLine.of("job/0"));
        assertThat(HeadOfLine.of("job/0")).isNotSameAs(HeadOfLine.of("job/1"));
    }
}
