package io.minato.loader.baseline;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** When an in-order loader's line is held, and how long each batch it kept back carries. */
class InOrderBatchesTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final InOrderBatches batches = new InOrderBatches(2, 5, now::get);

    @Test
    void shouldHoldOnlyWhileALaterBatchIsReadyAndTheHeadIsNot() {
        batches.samplePrepared(5);
        assertThat(batches.holding()).as("head half done, nothing behind").isFalse();
        batches.samplePrepared(6);
        assertThat(batches.holding()).as("batch 6 half done").isFalse();
        batches.samplePrepared(6);
        assertThat(batches.holding()).as("batch 6 ready behind batch 5").isTrue();
        now.addAndGet(40);
        batches.samplePrepared(5);
        assertThat(batches.holding()).as("the head is ready too").isFalse();
        batches.samplePrepared(4); // a batch already handed out: ignored
        assertThat(batches.holding()).isFalse();
        batches.close();
        assertThat(batches.holding()).isFalse();
    }

    /** Batch 5 ends the hold, batch 6 was ready behind it: both carry it up to their handout. */
    @Test
    void shouldGiveTheHeadThatEndsAHoldAndTheBatchesItKeptBackTheHoldUpToTheirHandout() {
        batches.samplePrepared(5);
        batches.samplePrepared(6);
        batches.samplePrepared(6); // held from 1000
        now.addAndGet(40);
        batches.samplePrepared(5); // ends at 1040
        now.addAndGet(3);
        assertThat(batches.handedOut(5)).isEqualTo(43);
        now.addAndGet(2);
        assertThat(batches.handedOut(6)).isEqualTo(45);

        batches.samplePrepared(7);
        batches.samplePrepared(7);
        assertThat(batches.handedOut(7)).as("prepared while nothing was held").isZero();
    }

    @Test
    void shouldCarryNothingForABatchPreparedAfterTheHoldEnded() {
        batches.samplePrepared(6);
        batches.samplePrepared(6); // held from 1000
        now.addAndGet(10);
        batches.samplePrepared(5);
        batches.samplePrepared(5); // ends at 1010
        batches.samplePrepared(7); // batch 7 is not ready: the hold did not keep it back
        now.addAndGet(100);
        batches.samplePrepared(7);
        assertThat(batches.handedOut(5)).isEqualTo(110);
        assertThat(batches.handedOut(6)).isEqualTo(110);
        assertThat(batches.handedOut(7)).isZero();
    }

    /**
     * Batch 8 was ready during the hold on batch 5 and still waits when batch 7 holds the line: the
     * line has not been free for it since the first hold began.
     */
    @Test
    void shouldContinueAHoldThatStartsWhileABatchOfThePreviousOneStillWaits() {
        batches.samplePrepared(8);
        batches.samplePrepared(8); // held from 1000, behind batch 5
        now.addAndGet(10);
        batches.samplePrepared(6);
        batches.samplePrepared(6);
        batches.samplePrepared(5);
        batches.samplePrepared(5); // ends at 1010
        assertThat(batches.handedOut(5)).isEqualTo(10);
        assertThat(batches.handedOut(6)).isEqualTo(10);
        assertThat(batches.holding()).as("batch 8 ready behind batch 7").isTrue();
        now.addAndGet(30);
        batches.samplePrepared(7);
        batches.samplePrepared(7); // ends at 1040
        assertThat(batches.handedOut(7)).isEqualTo(40);
        assertThat(batches.handedOut(8)).isEqualTo(40);
    }

    @Test
    void shouldForgetEveryHoldWhenClosed() {
        batches.samplePrepared(6);
        batches.samplePrepared(6);
        now.addAndGet(10);
        batches.close();
        assertThat(batches.holding()).isFalse();
        assertThat(batches.handedOut(5)).isZero();
        assertThat(batches.handedOut(6)).isZero();
    }
}
