package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.loader.WorkerScheduler.Kind;
import io.minato.loader.pacing.JobQueues;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class WorkerSchedulerTest {
    private static final long TICK = WorkerScheduler.TICK_NANOS;

    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final AtomicLong cpu = new AtomicLong();

    private WorkerScheduler scheduler(int cores) {
        return new WorkerScheduler("test", cores, clock::get, cpu::get);
    }

    /** Moves the clock one tick on, the process having used {@code cores} cores over it. */
    private void tick(double cores) {
        clock.addAndGet(TICK);
        cpu.addAndGet((long) (cores * TICK));
    }

    @Test
    void shouldAddAWorkerPerTickWhileADeviceRunsShortAndTheCpuHasRoom() {
        assertThat(WorkerScheduler.decide(2, 4, 2, true, 1.2, 1.0)).isEqualTo(3);
        assertThat(WorkerScheduler.decide(4, 4, 2, true, 1.2, 1.0)).isEqualTo(4); // all of them
        assertThat(WorkerScheduler.decide(2, 4, 2, true, 1.9, 1.8)).isEqualTo(2); // CPU full
    }

    @Test
    void shouldShedWorkersBeyondTheCoresWhenTheCpuIsFullAndADeviceRunsShort() {
        assertThat(WorkerScheduler.decide(4, 4, 2, true, 2.0, 1.9)).isEqualTo(3);
        assertThat(WorkerScheduler.decide(3, 4, 2, true, 2.0, 1.9)).isEqualTo(2);
        assertThat(WorkerScheduler.decide(2, 4, 2, true, 2.0, 1.9)).isEqualTo(2);
    }

    @Test
    void shouldGiveTheTrainersCoresBackWhileTheDevicesAreFedAndTheCpuIsFull() {
        // A trainer on the CPU uses 1.6 of 2 cores: one worker is all that fits beside it.
        assertThat(WorkerScheduler.decide(3, 4, 2, false, 2.0, 0.4)).isEqualTo(2);
        assertThat(WorkerScheduler.decide(2, 4, 2, false, 2.0, 0.4)).isEqualTo(1);
        assertThat(WorkerScheduler.decide(1, 4, 2, false, 2.0, 0.4)).isEqualTo(1); // never 0
        // The workers themselves fill the CPU (a simulated accelerator): they keep the cores,
        // also when Flink's own work takes a part of one.
        assertThat(WorkerScheduler.decide(2, 4, 2, false, 2.0, 1.8)).isEqualTo(2);
        assertThat(WorkerScheduler.decide(2, 4, 2, false, 2.0, 1.3)).isEqualTo(2);
        assertThat(WorkerScheduler.decide(3, 4, 2, false, 2.0, 1.3)).isEqualTo(2);
        // CPU to spare: nothing to give back.
        assertThat(WorkerScheduler.decide(3, 4, 2, false, 1.2, 0.2)).isEqualTo(3);
    }

    @Test
    void shouldStayWithinOneAndTheRegisteredWorkers() {
        assertThat(WorkerScheduler.decide(1, 1, 8, true, 0.1, 0.1)).isEqualTo(1);
        assertThat(WorkerScheduler.decide(5, 3, 8, false, 1.0, 1.0)).isEqualTo(3);
    }

    @Test
    void shouldStartWithAsManyActiveWorkersAsCoresAndNeverMoreThanRegistered() {
        WorkerScheduler s = scheduler(2);
        assertThat(s.active()).isZero();
        s.worker(Kind.FAST);
        assertThat(s.active()).isEqualTo(1);
        s.worker(Kind.FAST);
        WorkerScheduler.Registration slow = s.worker(Kind.SLOW);
        assertThat(s.active()).isEqualTo(2); // min(cores, workers)
        assertThat(s.tryAcquire(Kind.FAST)).isTrue();
        assertThat(s.tryAcquire(Kind.SLOW)).isTrue();
        assertThat(s.tryAcquire(Kind.FAST)).isFalse();
        s.release(0);
        s.release(0);
        assertThat(s.running()).isZero();
        slow.close();
        assertThat(s.active()).isEqualTo(2);
    }

    @Test
    void shouldReviseTheActiveCountFromTheQueuesAndTheProcessCpu() {
        WorkerScheduler s = scheduler(2);
        AtomicInteger held = new AtomicInteger(0);
        for (int i = 0; i < 4; i++) {
            s.worker(i % 2 == 0 ? Kind.FAST : Kind.SLOW);
        }
        s.queue(held::get, 2);
        WorkerScheduler.Registration late = s.worker(Kind.FAST); // five workers, two cores
        late.close();
        assertThat(s.active()).isEqualTo(2); // the start: min(cores, workers)

        // The device runs short and the CPU is half idle: a worker more per tick, up to all 4.
        for (int t = 0; t < 5; t++) {
            tick(0.8);
            s.tryAcquire(Kind.FAST);
            s.release(0);
        }
        assertThat(s.active()).isEqualTo(4);

        // Fed, and a trainer takes 1.7 cores beside the 0.3 the workers used: down to one.
        held.set(2);
        for (int t = 0; t < 5; t++) {
            tick(2.0);
            assertThat(s.tryAcquire(Kind.FAST)).isTrue();
            s.release((long) (0.3 * TICK));
        }
        assertThat(s.active()).isEqualTo(1);
        // Over that time the count was 4 for one tick, 3, 2, then 1.
        assertThat(s.meanActive()).isBetween(1.0, 4.0);
    }

    @Test
    void shouldKeepItsStartWhileNoQueueIsKnown() {
        WorkerScheduler s = scheduler(2);
        s.worker(Kind.FAST);
        s.worker(Kind.FAST);
        s.worker(Kind.SLOW);
        s.worker(Kind.SLOW);
        for (int t = 0; t < 5; t++) {
            tick(0.1);
            s.tryAcquire(Kind.FAST);
            s.release(0);
        }
        assertThat(s.active()).isEqualTo(2);
        assertThat(s.sawQueues()).isFalse();
    }

    /**
     * On a short run the job's queues may come a tick before the workers run out of work: the
     * scheduler saw them, though it had no tick left to revise its count by them.
     */
    @Test
    void shouldHaveSeenTheJobsQueuesOnceToldOfThemEvenWithoutATickAfter() {
        WorkerScheduler s = scheduler(2);
        s.worker(Kind.FAST);
        s.worker(Kind.SLOW);
        assertThat(s.sawQueues()).isFalse();
        s.jobQueues(new JobQueues(1, 1));
        assertThat(s.sawQueues()).isTrue();
        assertThat(s.active()).isEqualTo(2);
    }

    /**
     * A TaskManager with workers and no trainer: the queues the job reports pace its workers as a
     * trainer's own queue would, a device with room adding workers and every queue full shedding
     * them.
     */
    @Test
    void shouldPaceByTheQueuesTheJobReportsWithNoTrainerInThisJvm() {
        WorkerScheduler s = scheduler(2);
        for (int i = 0; i < 4; i++) {
            s.worker(i % 2 == 0 ? Kind.FAST : Kind.SLOW);
        }
        s.jobQueues(new JobQueues(3, 1)); // three devices, one with room
        for (int t = 0; t < 5; t++) {
            tick(0.8);
            s.tryAcquire(Kind.FAST);
            s.release(0);
        }
        assertThat(s.active()).isEqualTo(4);
        assertThat(s.sawQueues()).isTrue();

        s.jobQueues(new JobQueues(3, 0)); // every device fed, the CPU full of other work
        for (int t = 0; t < 5; t++) {
            tick(2.0);
            assertThat(s.tryAcquire(Kind.FAST)).isTrue();
            s.release((long) (0.3 * TICK));
        }
        assertThat(s.active()).isEqualTo(1);
    }

    @Test
    void shouldServeAWaitingFastWorkerBeforeASlowOneWhileADeviceRunsShort() throws Exception {
        WorkerScheduler s = scheduler(1);
        AtomicInteger held = new AtomicInteger(0);
        s.worker(Kind.FAST);
        s.worker(Kind.SLOW);
        s.queue(held::get, 2);
        tick(0.5); // hungry, CPU with room: one permit, fast first
        assertThat(s.tryAcquire(Kind.SLOW)).isTrue(); // nobody waits: the slow one may take it
        Thread fast = waitingFor(s, Kind.FAST);
        s.release(0);
        // The slow worker asks again at once, but the fast one waits: it goes first.
        assertThat(s.tryAcquire(Kind.SLOW)).isFalse();
        fast.join(5000);
        assertThat(fast.isAlive()).isFalse();
        assertThat(s.running()).isEqualTo(1);
        s.release(0);
    }

    @Test
    void shouldServeAWaitingSlowWorkerFirstWhileEveryDeviceIsFed() throws Exception {
        slowFirst(2); // fed
    }

    @Test
    void shouldServeAWaitingSlowWorkerFirstWhenTheCpuIsFullThoughADeviceRunsShort()
            throws Exception {
        slowFirst(0); // bound by the CPU: the longest work first
    }

    private void slowFirst(int batchesHeld) throws Exception {
        WorkerScheduler s = scheduler(1);
        AtomicInteger held = new AtomicInteger(batchesHeld);
        s.worker(Kind.FAST);
        s.worker(Kind.SLOW);
        s.queue(held::get, 2);
        tick(1.0);
        assertThat(s.tryAcquire(Kind.FAST)).isTrue();
        Thread slow = waitingFor(s, Kind.SLOW);
        s.release(0);
        assertThat(s.tryAcquire(Kind.FAST)).isFalse();
        slow.join(5000);
        assertThat(slow.isAlive()).isFalse();
        s.release(0);
    }

    @Test
    void shouldLetAWaitingWorkerRunItsMailboxBetweenLooks() throws Exception {
        WorkerScheduler s = scheduler(1);
        s.worker(Kind.FAST);
        s.worker(Kind.FAST);
        assertThat(s.tryAcquire(Kind.FAST)).isTrue();
        AtomicInteger mails = new AtomicInteger();
        // A checkpoint's mail, say: run while waiting.
        Thread other = acquiring(s, Kind.FAST, () -> mails.incrementAndGet() <= 3);
        while (mails.get() < 5) {
            Thread.sleep(1);
        }
        s.release(0);
        other.join(5000);
        assertThat(other.isAlive()).isFalse();
        assertThat(mails.get()).isGreaterThanOrEqualTo(5);
        s.release(0);
    }

    /** A thread that acquires a permit for {@code kind}, calling {@code between} as it waits. */
    private static Thread acquiring(WorkerScheduler s, Kind kind, WorkerScheduler.Between between) {
        Thread t =
                new Thread(
                        () -> {
                            try {
                                s.acquire(kind, between);
                            } catch (Exception e) {
                                throw new AssertionError(e);
                            }
                        });
        t.start();
        return t;
    }

    /** A thread that waits for a permit for {@code kind}, once it waits. */
    private static Thread waitingFor(WorkerScheduler s, Kind kind) throws InterruptedException {
        CountDownLatch waiting = new CountDownLatch(1);
        Thread t =
                acquiring(
                        s,
                        kind,
                        () -> {
                            waiting.countDown();
                            return false;
                        });
        assertThat(waiting.await(5, TimeUnit.SECONDS)).isTrue();
        return t;
    }

    @Test
    void shouldForgetAJobsSchedulerWhenTheLastRegistrationCloses() {
        String key = WorkerScheduler.key("job-" + System.nanoTime(), 0);
        WorkerScheduler s = WorkerScheduler.of(key);
        WorkerScheduler.Registration w = s.worker(Kind.FAST);
        WorkerScheduler.Registration q = s.queue(() -> 0, 2);
        assertThat(WorkerScheduler.of(key)).isSameAs(s);
        w.close();
        w.close(); // twice is once
        assertThat(WorkerScheduler.live(key)).isTrue();
        q.close();
        assertThat(WorkerScheduler.live(key)).isFalse();
        assertThat(WorkerScheduler.key("j", 3)).isNotEqualTo(WorkerScheduler.key("j", 4));
    }
}
