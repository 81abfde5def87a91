package io.minato.loader.baseline;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.SampleTask;
import io.minato.spi.MemoStats;
import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.SampleSet;
import io.minato.spi.Shape3;
import io.minato.spi.Steps;
import io.minato.spi.Transforms;
import io.minato.spi.Workload;
import java.io.DataInput;
import java.io.DataOutput;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/** DJL's own loader: its prefetch in flight, in order, and how long it held each batch back. */
class DjlLoaderTest {
    /** Sample 0's preparation waits for this. */
    static final CountDownLatch GATE = new CountDownLatch(1);

    /**
     * With its prefetch's worth of batches at hand, DJL prepares them at once: batch 1 is ready
     * while batch 0 waits for its slow sample, is not handed out before it, and batch 0 carries the
     * hold.
     */
    @Test
    void shouldPrepareItsPrefetchAtOnceAndHoldReadyBatchesBehindASlowHead() throws Exception {
        DjlLoader op = new DjlLoader(Tiny.workload("gated", DjlLoaderTest::gated), 2, 1, 2);
        try (var h = new OneInputStreamOperatorTestHarness<SampleTask, Batch>(op)) {
            h.open();
            long fed = System.nanoTime();
            // 2 x 2 worker threads = 4 batches of prefetch; sample 0 (batch 0) is held.
            for (int i = 0; i < 8; i++) {
                h.processElement(new SampleTask(1, 0, i, i), i);
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (!op.holdingBack() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(op.holdingBack()).as("a batch ready behind batch 0").isTrue();
            Thread.sleep(20);
            assertThat(h.extractOutputValues()).as("nothing overtakes batch 0").isEmpty();
            GATE.countDown();
            h.endInput();
            long heldAtMost = System.nanoTime() - fed;
            List<Batch> out = h.extractOutputValues();
            assertThat(out)
                    .flatExtracting(Batch::samples)
                    .extracting(s -> s.task().index())
                    .containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
            assertThat(out.get(0).heldBackNanos())
                    .as("batch 0 ended the hold")
                    .isBetween(Duration.ofMillis(20).toNanos(), heldAtMost);
            assertThat(op.holdingBack()).isFalse();
        }
    }

    /**
     * A batch that fails leaves the other batches' fetches running in DJL's workers, which stack
     * their arrays in native code: the loader frees its arrays only once they end, and its task
     * ends after them, also when the task's thread is interrupted. Freed under a running stack,
     * libtorch read freed memory and took the JVM down (seen once in nine runs of a bad image under
     * the DJL loader).
     */
    @Test
    void shouldEndTheOtherBatchesFetchesBeforeFreeingTheirArraysWhenABatchFails() throws Exception {
        DjlLoader op = new DjlLoader(Tiny.workload("failing", DjlLoaderTest::failing), 2, 1, 2);
        var h = new OneInputStreamOperatorTestHarness<SampleTask, Batch>(op);
        h.open();
        try {
            for (int i = 0; i < 8; i++) {
                h.processElement(new SampleTask(1, 0, i, i), i);
            }
        } catch (BadInputException e) {
            // The failure came back with an element: as good as by mail.
        }
        assertThat(SLOW_STARTED.await(10, TimeUnit.SECONDS))
                .as("batch 1 in its fetch as batch 0 fails")
                .isTrue();
        Thread.currentThread().interrupt(); // as Flink's task canceler interrupts the task
        h.close();
        Thread.interrupted(); // not this test's: the harness's close may have taken it
        assertThat(SLOW_ENDED.getCount()).as("batch 1's fetch ended before the task").isZero();
        assertThat(Thread.getAllStackTraces().keySet())
                .extracting(Thread::getName)
                .doesNotContain("djl-loader-worker");
    }

    /** Sample 0 waits for {@link #GATE}. */
    private static void gated(int index) {
        if (index == 0) {
            try {
                GATE.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static final CountDownLatch SLOW_STARTED = new CountDownLatch(1);
    static final CountDownLatch SLOW_ENDED = new CountDownLatch(1);

    /** Sample 0 is bad; sample 2 takes a second, deaf to interrupts as native code is. */
    private static void failing(int index) throws BadInputException {
        if (index == 0) {
            throw new BadInputException(java.nio.file.Path.of("s0"), "cannot decode the sample");
        }
        if (index == 2) {
            SLOW_STARTED.countDown();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (System.nanoTime() < end) {
                Thread.onSpinWait();
            }
            SLOW_ENDED.countDown();
        }
    }

    /** What sample {@code index}'s preparation does first. */
    interface Before extends java.io.Serializable {
        void run(int index) throws BadInputException;
    }

    /** Tiny samples of three channels of 2 x 2 values; each does {@code before} first. */
    static final class Tiny implements SampleSet<Integer>, Transforms<Integer> {
        private static final long serialVersionUID = 1L;
        private final Before before;

        private Tiny(Before before) {
            this.before = before;
        }

        static Workload<Integer> workload(String name, Before before) {
            Tiny t = new Tiny(before);
            return new Workload<>(name, t, t);
        }

        @Override
        public int size() {
            return 8;
        }

        @Override
        public String traceName(int index) {
            return "s" + index;
        }

        @Override
        public void check(int index) {}

        @Override
        public Integer open(int index) {
            return index;
        }

        @Override
        public MemoStats memo() {
            return MemoStats.NONE;
        }

        @Override
        public Steps<Integer> start(SampleKey key) {
            return new Steps<>() {
                private Patch result;

                @Override
                public SampleKey key() {
                    return key;
                }

                @Override
                public boolean isDone() {
                    return result != null;
                }

                @Override
                public void advance(Integer source) throws BadInputException {
                    before.run(source);
                    result = Patch.ofClass(new Shape3(3, 2, 2), new float[12], source);
                }

                @Override
                public Patch result() {
                    return result;
                }

                @Override
                public long heldBytes() {
                    return 64;
                }

                @Override
                public void writeTo(DataOutput out) {
                    throw new UnsupportedOperationException("not needed here");
                }
            };
        }

        @Override
        public Steps<Integer> read(DataInput in) {
            throw new UnsupportedOperationException("not needed here");
        }
    }
}
