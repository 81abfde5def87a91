package io.minato.trainer;

import static io.minato.trainer.TestBatches.batch;
import static io.minato.trainer.TestBatches.traceLines;
import static io.minato.trainer.gpu.FakeGpuMonitor.sample;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.minato.sample.Batch;
import io.minato.sample.SamplePath;
import io.minato.trainer.TestAccelerators.Failing;
import io.minato.trainer.TestAccelerators.Gate;
import io.minato.trainer.TestAccelerators.OnGpu;
import io.minato.trainer.gpu.FakeGpuMonitor;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Drives the trainer sink's writer directly, as the sink operator's task thread would. */
class TrainerSinkWriterTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final long GIB = 1L << 30;

    @TempDir Path tmp;
    private final List<TrainerSinkWriter> writers = new ArrayList<>();

    @AfterEach
    void closeWriters() throws IOException {
        for (TrainerSinkWriter w : writers) {
            w.close();
        }
    }

    /**
     * A cancelled task closes its writer from an interrupted thread while a step runs in native
     * code: the accelerator is closed only once the step ended, and the interrupt is kept.
     */
    @Test
    void shouldCloseTheAcceleratorOnlyAfterTheRunningStepEvenWhenInterrupted() throws Exception {
        TestAccelerators.Deaf deaf = new TestAccelerators.Deaf(700);
        TrainerSinkWriter w = writer(sink(deaf, 2), new FakeTrainerContext(0, 1));
        w.write(batch(0, 0));
        assertThat(deaf.stepping.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        AtomicBoolean keptInterrupt = new AtomicBoolean();
        Thread closing =
                new Thread(
                        () -> {
                            Thread.currentThread().interrupt(); // as Flink's task canceler does
                            try {
                                w.close();
                            } catch (IOException e) {
                                throw new RuntimeException(e);
                            }
                            keptInterrupt.set(Thread.currentThread().isInterrupted());
                        });
        closing.start();
        closing.join(TIMEOUT.toMillis());

        assertThat(closing.isAlive()).isFalse();
        assertThat(deaf.closed).isTrue();
        assertThat(deaf.closedWhileStepping).as("closed under the running step").isFalse();
        assertThat(keptInterrupt).isTrue();
    }

    @Test
    void shouldBlockTheThirdWriteUntilAStepFinishesWithQueueDepthTwo() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 2), new FakeTrainerContext(0, 1));

        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    w.write(batch(0, 0));
                    w.write(batch(0, 1));
                });
        Thread third = new Thread(() -> writeUnchecked(w, batch(0, 2)));
        third.start();
        await(() -> third.getState() == Thread.State.WAITING);
        assertThat(third.isAlive()).isTrue();
        assertThat(w.queued()).isEqualTo(2);
        assertThat(w.counters().steps()).isZero();

        gate.open(1);
        third.join(TIMEOUT.toMillis());
        assertThat(third.isAlive()).as("third write returned after one step").isFalse();
        assertThat(w.counters().steps()).isEqualTo(1);
        assertThat(w.queued()).isEqualTo(2);
    }

    /**
     * While its task consumes a restored checkpoint's in-flight data, the writer takes every batch:
     * Flink takes no checkpoint until that data is consumed, so it must not wait for steps.
     */
    @Test
    void shouldTakeBatchesBeyondTheQueueWhileTheTaskRestores() throws Exception {
        Gate gate = new Gate();
        AtomicBoolean restoring = new AtomicBoolean(true);
        TrainerSinkWriter w = restoringWriter(gate, restoring);
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    for (int i = 0; i < 5; i++) {
                        w.write(batch(0, i));
                    }
                });
        assertThat(w.queued()).isEqualTo(5);
        assertThat(w.counters().steps()).isZero();

        // Running: the queue's depth holds again.
        restoring.set(false);
        Thread sixth = new Thread(() -> writeUnchecked(w, batch(0, 5)));
        sixth.start();
        await(() -> sixth.getState() == Thread.State.WAITING);
        assertThat(w.queued()).isEqualTo(5);
        gate.open(4);
        sixth.join(TIMEOUT.toMillis());
        assertThat(sixth.isAlive())
                .as("the sixth write returned once the queue was short")
                .isFalse();
    }

    /**
     * While the accelerator prepares, no step frees the queue: the writer takes up to four depths,
     * so that its task stays free for a checkpoint's barrier, and then waits again.
     */
    @Test
    void shouldTakeFourQueueDepthsWhileTheAcceleratorPrepares() throws Exception {
        Gate gate = new Gate();
        gate.prepared = new CountDownLatch(1);
        TrainerSinkWriter w = preparing(sink(gate, 2), new FakeTrainerContext(0, 1));
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    for (int i = 0; i < 8; i++) {
                        w.write(batch(0, i));
                    }
                });
        assertThat(w.queued()).isEqualTo(8);
        Thread ninth = new Thread(() -> writeUnchecked(w, batch(0, 8)));
        ninth.start();
        await(() -> ninth.getState() == Thread.State.WAITING);
        assertThat(w.queued()).isEqualTo(8);
        List<TrainerWriterState> state = w.snapshotState(1);
        assertThat(state.get(0).queued()).as("a checkpoint meanwhile").hasSize(8);

        // Prepared: the queue is over its depth, and the write waits for two steps.
        gate.prepared.countDown();
        gate.open(1);
        await(() -> w.queued() == 7);
        Thread.sleep(50);
        assertThat(ninth.isAlive()).as("the ninth write waits for a second step").isTrue();
        gate.open(1);
        ninth.join(TIMEOUT.toMillis());
        assertThat(ninth.isAlive()).as("the ninth write returned after two steps").isFalse();
        assertThat(w.queued()).isEqualTo(7);
    }

    /**
     * Batches taken while the task restored make the queue longer than its depth: the next write
     * waits for two steps, not for the backlog to drain, so the task stays free for a checkpoint's
     * barrier, and the backlog shrinks by one batch a write until the queue is at its depth.
     */
    @Test
    void shouldWaitForTwoStepsAWriteWhileABacklogDrains() throws Exception {
        Gate gate = new Gate();
        AtomicBoolean restoring = new AtomicBoolean(true);
        TrainerSinkWriter w = restoringWriter(gate, restoring);
        for (int i = 0; i < 6; i++) {
            w.write(batch(0, i));
        }
        restoring.set(false);
        for (int i = 6; i < 10; i++) {
            Batch b = batch(0, i);
            int before = w.queued();
            Thread write = new Thread(() -> writeUnchecked(w, b));
            write.start();
            await(() -> write.getState() == Thread.State.WAITING);
            gate.open(1);
            await(() -> w.queued() == before - 1);
            if (before > 2) {
                Thread.sleep(50);
                assertThat(write.isAlive()).as("write %d waits for a second step", i).isTrue();
                gate.open(1);
            }
            write.join(TIMEOUT.toMillis());
            assertThat(write.isAlive()).as("write %d returned", i).isFalse();
            assertThat(w.queued()).isEqualTo(Math.max(before - 1, 2));
        }
        assertThat(w.queued()).as("drained to its depth").isEqualTo(2);
    }

    /** Each step is told the batch queued behind it, for the accelerator to stage meanwhile. */
    @Test
    void shouldNameTheQueuedNextBatchToEachStep() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 3), new FakeTrainerContext(0, 1));
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    for (int i = 0; i < 3; i++) {
                        w.write(batch(0, i));
                    }
                });
        await(() -> gate.started.get() == 1);
        gate.open(3);
        await(() -> w.counters().steps() == 3);
        // The first step may have begun before batch 1 was written; the others may not.
        assertThat(gate.nexts.subList(1, 3)).containsExactly(2L, -1L);
        assertThat(gate.nexts.get(0)).isIn(-1L, 1L);
    }

    /**
     * A writer whose step waits for a starving replica must not hold the upstream back: the other
     * device's batches may sit behind this device's samples in the shared operators. While no
     * replica starves, its queue keeps its depth, even with its step waiting for the others.
     */
    @ParameterizedTest(name = "the other replica in {0}")
    @ValueSource(strings = {"this TaskManager", "another TaskManager"})
    void shouldTakeBatchesBeyondTheQueueOnlyWhileAnotherReplicaStarves(String where)
            throws Exception {
        String group = "writer-" + UUID.randomUUID();
        TrainerSinkWriter w = lockstepReplica0(group);
        ReplicaGroup.Member other = replicaElsewhere(where, group);
        Thread otherStart = new Thread(() -> initial(other));
        otherStart.start();
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    w.write(batch(0, 0));
                    w.write(batch(0, 1));
                });
        // The step of batch 0 waits for the other replica, which is busy, not starving: the
        // queue is at its depth and the next batch waits.
        Thread third =
                new Thread(
                        () -> {
                            try {
                                w.write(batch(0, 2));
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        });
        third.start();
        third.join(500);
        assertThat(third.isAlive()).as("a write beyond the depth waits").isTrue();
        assertThat(w.queued()).isEqualTo(2);

        // Now it starves: its batches may be stuck behind these, so this writer takes them all.
        other.starving(true);
        third.join(TIMEOUT.toMillis());
        assertThat(third.isAlive()).isFalse();
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    w.write(batch(0, 3));
                    w.write(batch(0, 4));
                });
        assertThat(w.queued()).isEqualTo(5);
        assertThat(w.counters().steps()).isZero();

        // The other replica catches up: every batch is trained, then both run out of data.
        other.starving(false);
        otherStart.join(TIMEOUT.toMillis());
        Thread otherSteps =
                new Thread(
                        () -> {
                            try {
                                for (int step = 1; step <= 5; step++) {
                                    other.allReduce(step, new float[] {1f}, 1);
                                }
                                other.allReduce(6, null, 0);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        });
        otherSteps.start();
        assertTimeoutPreemptively(TIMEOUT, () -> w.endInput());
        assertThat(w.counters().steps()).isEqualTo(5);
        otherSteps.join(TIMEOUT.toMillis());
        other.leave();
    }

    /**
     * A replica whose input ended trains what it holds inside its task's end of input, where Flink
     * takes no snapshot. The other replicas checkpoint meanwhile: it takes its state at their cut,
     * and gives that state for the checkpoint once training is over, not its state at the end.
     */
    @ParameterizedTest(name = "the other replica in {0}")
    @ValueSource(strings = {"this TaskManager", "another TaskManager"})
    void shouldGiveTheStateTakenAtACutWhileItsInputEndedAndItTrainedOn(String where)
            throws Exception {
        String group = "writer-" + UUID.randomUUID();
        TrainerSinkWriter w = lockstepReplica0(group);
        ReplicaGroup.Member other = replicaElsewhere(where, group);
        Thread otherStart = new Thread(() -> initial(other));
        otherStart.start();
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    w.write(batch(0, 0));
                    w.write(batch(0, 1));
                    otherStart.join();
                    assertThat(other.allReduce(1, new float[] {1f}, 1)).isNotNull();
                });
        await(() -> w.counters().steps() == 1);

        // Its input ends with batch 1 still to train: the task waits in flush.
        FutureTask<Void> flush =
                new FutureTask<>(
                        () -> {
                            w.endInput();
                            return null;
                        });
        new Thread(flush).start();
        other.cut(9);
        other.snapshotted(9);
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    // Held by the cut until the ended writer took its state.
                    assertThat(other.allReduce(2, new float[] {1f}, 1)).isNotNull();
                    assertThat(other.allReduce(3, null, 0)).as("training is over").isNull();
                    flush.get();
                });
        assertThat(w.counters().steps()).isEqualTo(2);

        TrainerWriterState atCut = w.snapshotState(9).get(0);
        assertThat(atCut.counters().steps()).isEqualTo(1);
        assertThat(atCut.queued()).extracting(Batch::sequence).containsExactly(1L);
        TrainerWriterState atEnd = w.snapshotState(10).get(0);
        assertThat(atEnd.counters().steps()).isEqualTo(2);
        assertThat(atEnd.queued()).isEmpty();
        other.leave();
    }

    /** Replica 0 of two in {@code group}, queue depth 2, its accelerator prepared. */
    private TrainerSinkWriter lockstepReplica0(String group) throws Exception {
        TrainerSinkWriter w =
                new TrainerSinkWriter(
                        new DeviceAccount.Context(
                                0,
                                2,
                                group,
                                Replicas.inJvm(),
                                2,
                                null,
                                null,
                                null,
                                new UnregisteredMetricsGroup(),
                                null,
                                null),
                        new LockstepAccelerator());
        writers.add(w);
        await(w::ready);
        return w;
    }

    /** Replica 1 of {@code group}, in this TaskManager or, over TCP, as if in another one. */
    private static ReplicaGroup.Member replicaElsewhere(String where, String group)
            throws IOException {
        Replicas others =
                where.startsWith("this")
                        ? Replicas.inJvm()
                        : new Replicas(
                                TrainerRendezvous.inJvm(),
                                "tm-elsewhere",
                                "127.0.0.1",
                                InetAddress.getLoopbackAddress());
        ReplicaGroup.Member other = others.join(group, 2, 1);
        assertThat(other instanceof RemoteMember).isEqualTo(where.startsWith("another"));
        return other;
    }

    private static void initial(ReplicaGroup.Member m) {
        try {
            m.initialState(null, 0);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void shouldReturnFromTheThirdWriteOnlyAfterTheFirstSlowSimulatedStepEnded() throws Exception {
        TrainerSinkWriter w =
                writer(
                        sink(new SimulatedAccelerator.Factory(300), 2),
                        new FakeTrainerContext(0, 1));
        assertTimeoutPreemptively(
                TIMEOUT,
                () -> {
                    w.write(batch(0, 0));
                    w.write(batch(0, 1));
                    w.write(batch(0, 2));
                });
        assertThat(w.counters().steps()).isGreaterThanOrEqualTo(1);
    }

    @Test
    void shouldRunTheRunsEndOnceInTheCloseOfItsLastDeviceAfterTheLastStep() throws Exception {
        List<Path> ended = new java.util.concurrent.CopyOnWriteArrayList<>();
        TrainerSink sink =
                TrainerSink.builder()
                        .setAccelerator(new SimulatedAccelerator.Factory(1))
                        .optOutputDir(tmp.resolve("out"))
                        .optRecipe(TestBatches.RECIPE)
                        .optOnRunEnd(ended::add)
                        .build();
        org.apache.flink.api.common.JobID job = new org.apache.flink.api.common.JobID();
        TrainerSinkWriter first = new FakeTrainerContext(0, 2, job).trainer(sink);
        TrainerSinkWriter second = new FakeTrainerContext(1, 2, job).trainer(sink);
        first.write(batch(0, 0));
        second.write(batch(1, 0));
        first.endInput();
        second.endInput();

        first.close();
        assertThat(ended).as("one device of two has closed").isEmpty();
        second.close();
        assertThat(ended).containsExactly(tmp.resolve("out"));
        assertThat(DeviceSummary.file(tmp.resolve("out"), 1)).exists();

        // A device closed without reaching the end of its input (a failure) ends nothing.
        TrainerSinkWriter failed = new FakeTrainerContext(0, 1).trainer(sink);
        failed.write(batch(0, 1));
        failed.close();
        assertThat(ended).hasSize(1);
    }

    @Test
    void shouldCountBusyTimeInsideStepsAndWaitTimeBetweenThem() throws Exception {
        FakeTrainerContext ctx = new FakeTrainerContext(0, 1);
        TrainerSinkWriter w = writer(sink(new SimulatedAccelerator.Factory(50), 2), ctx);

        w.write(batch(0, 0));
        await(() -> w.counters().steps() == 1);
        Thread.sleep(150); // the device idles: no batch
        w.write(batch(0, 1));
        w.write(batch(0, 2));
        w.endInput();

        DeviceCounters c = w.counters();
        assertThat(c.steps()).isEqualTo(3);
        assertThat(c.busyNanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150));
        assertThat(c.waitNanos())
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150))
                .isLessThan(TimeUnit.SECONDS.toNanos(5));
        assertThat(c.lastStepEndMillis() - c.firstStepStartMillis())
                .isGreaterThanOrEqualTo(300 - 2);

        FakeTrainerContext.RecordingMetricGroup m = ctx.metrics;
        assertThat(m.count("steps")).isEqualTo(3);
        assertThat(m.count("samplesFast")).isEqualTo(3);
        assertThat(m.count("samplesSlow")).isEqualTo(3);
        assertThat(m.count("samplesTrained")).isEqualTo(6);
        assertThat((Long) m.gaugeValue("busyMillis")).isGreaterThanOrEqualTo(150);
        assertThat((Long) m.gaugeValue("waitMillis")).isGreaterThanOrEqualTo(150);
        assertThat(m.gaugeValue("queueDepth")).isEqualTo(0);
    }

    /**
     * The wait between steps is split by how long the loader held the awaited batch back: that much
     * of the wait, at most all of it, was head-of-line, and the rest the workers being behind. The
     * first step's start-up is no wait, whatever its batch carries.
     */
    @Test
    void shouldCountTheWaitWhileALoaderHeldABatchBackAsHeadOfLine() throws Exception {
        TrainerSinkWriter w =
                writer(sink(new SimulatedAccelerator.Factory(10), 2), new FakeTrainerContext(0, 1));
        long ms = TimeUnit.MILLISECONDS.toNanos(1);

        w.write(heldBack(batch(0, 0), 5_000 * ms));
        await(() -> w.counters().steps() == 1);
        assertThat(w.counters().headOfLineNanos()).as("start-up").isZero();
        Thread.sleep(200);
        w.write(heldBack(batch(0, 1), 100 * ms));
        await(() -> w.counters().steps() == 2);
        DeviceCounters first = w.counters();
        assertThat(first.waitNanos()).isGreaterThanOrEqualTo(200 * ms);
        assertThat(first.headOfLineNanos()).as("held 100 ms of the wait").isEqualTo(100 * ms);

        Thread.sleep(50);
        w.write(heldBack(batch(0, 2), 5_000 * ms));
        w.endInput();
        DeviceCounters c = w.counters();
        long secondWait = c.waitNanos() - first.waitNanos();
        assertThat(secondWait).isGreaterThanOrEqualTo(50 * ms);
        assertThat(c.headOfLineNanos() - first.headOfLineNanos())
                .as("held longer than the device waited: all of the wait")
                .isEqualTo(secondWait);
        w.close();
    }

    private static Batch heldBack(Batch batch, long nanos) {
        return new Batch(batch.device(), batch.sequence(), batch.samples(), nanos);
    }

    @Test
    void shouldCheckpointAtAStepBoundaryAndRestoreQueuedBatchesModelAndTrace() throws Exception {
        Path traces = tmp.resolve("trace");
        Gate gate = new Gate();
        TrainerSink sink = sink(gate, 3);
        TrainerSinkWriter w = writer(sink, new FakeTrainerContext(0, 1));
        Batch b0 = batch(0, 0);
        Batch b1 = batch(0, 1);
        Batch b2 = batch(0, 2);
        w.write(b0);
        w.write(b1);
        w.write(b2);
        gate.open(1);
        await(() -> gate.started.get() == 2); // step 1 (b1) is running
        Path traceFile = TraceFiles.deviceFile(traces, 0);
        assertThat(withoutStepTimes(traceFile)).isEqualTo(traceLines(b0, 0));

        FutureTask<List<TrainerWriterState>> checkpoint =
                new FutureTask<>(() -> w.snapshotState(1));
        Thread taskThread = new Thread(checkpoint);
        taskThread.start();
        await(() -> taskThread.getState() == Thread.State.WAITING);
        assertThat(checkpoint).as("waits for the running step").isNotDone();
        gate.open(1);
        TrainerWriterState state = checkpoint.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(0);

        assertThat(state.device()).isZero();
        assertThat(state.queued()).containsExactly(b2);
        assertThat(state.counters().steps()).isEqualTo(2);
        assertThat(state.counters().fast()).isEqualTo(2);
        assertThat(state.consumerState()).isEqualTo(ByteBuffer.allocate(8).putLong(2).array());
        assertThat(state.traceLength()).isEqualTo(Files.size(traceFile));

        // Trained after the checkpoint, then lost in a failure: forgotten on restore.
        gate.open(1);
        await(() -> w.counters().steps() == 3);
        assertThat(Files.readAllLines(traceFile)).hasSize(6);
        w.close();
        writers.remove(w);

        SimpleVersionedSerializer<TrainerWriterState> serializer =
                new TrainerWriterStateSerializer();
        TrainerWriterState restored =
                serializer.deserialize(serializer.getVersion(), serializer.serialize(state));
        Gate gate2 = new Gate();
        TrainerSink sink2 = sink(gate2, 3);
        FakeTrainerContext ctx2 = new FakeTrainerContext(0, 1);
        TrainerSinkWriter w2 = ctx2.trainer(sink2, List.of(restored));
        writers.add(w2);
        assertThat(Files.size(traceFile)).isEqualTo(state.traceLength());
        assertThat(gate2.restoredSteps).isEqualTo(2);
        assertThat(w2.counters()).isEqualTo(state.counters());
        assertThat(ctx2.metrics.count("samplesTrained"))
                .as("counted on from the checkpoint")
                .isEqualTo(state.counters().fast() + state.counters().slow());
        assertThat(w2.queued()).isEqualTo(1);

        gate2.open(1);
        w2.endInput();
        List<String> expected = new ArrayList<>(traceLines(b0, 0));
        expected.addAll(traceLines(b1, 1));
        expected.addAll(traceLines(b2, 2));
        assertThat(withoutStepTimes(traceFile)).isEqualTo(expected);
        assertThat(gate2.trained).hasSize(1);
        assertThat(gate2.trained.get(0).sequence()).isEqualTo(2);
        for (int i = 0; i < b2.samples().size(); i++) {
            assertThat(
                            gate2.trained
                                    .get(0)
                                    .samples()
                                    .get(i)
                                    .patch()
                                    .sameContent(b2.samples().get(i).patch()))
                    .as("a queued sample restored as its identity and prepared again")
                    .isTrue();
        }
        DeviceSummary summary = DeviceSummary.read(DeviceSummary.file(tmp.resolve("out"), 0));
        assertThat(summary.steps()).isEqualTo(3);
        assertThat(summary.samples()).isEqualTo(6);
    }

    /**
     * After a step longer than {@link StepStartCapture.LONG_STEP_NANOS}, the next starts with the
     * model captured: a checkpoint during it does not wait, and holds the model, queue, counters
     * and trace as of the step's start.
     */
    @Test
    void shouldCheckpointDuringAStepThatFollowsALongOneAsOfItsStart() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 3), new FakeTrainerContext(0, 1));
        Batch b0 = batch(0, 0);
        Batch b1 = batch(0, 1);
        w.write(b0);
        w.write(b1);
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(StepStartCapture.LONG_STEP_NANOS) + 200);
        gate.open(1); // step 0 took over a second
        await(() -> gate.started.get() == 2); // step 1 (b1) is running, and waits

        TrainerWriterState state =
                CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return w.snapshotState(1).get(0);
                                    } catch (IOException e) {
                                        throw new IllegalStateException(e);
                                    }
                                })
                        .get(5, TimeUnit.SECONDS);
        assertThat(state.queued()).containsExactly(b1);
        assertThat(state.counters().steps()).isEqualTo(1);
        assertThat(state.consumerState()).isEqualTo(ByteBuffer.allocate(8).putLong(1).array());
        assertThat(state.traceLength())
                .isEqualTo(Files.size(TraceFiles.deviceFile(tmp.resolve("trace"), 0)));
        gate.open(1);
        w.endInput();
        assertThat(w.counters().steps()).isEqualTo(2);
    }

    /**
     * A write that waits for room runs its task's mail: a checkpoint whose barrier overtook the
     * input is taken meanwhile, at the next step boundary, and holds the waiting batch as queued
     * (its record was consumed before the barrier). Then the write queues it.
     */
    @Test
    void shouldTakeACheckpointWhileAWriteWaitsAndHoldTheWaitingBatchAsQueued() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 2), new FakeTrainerContext(0, 1));
        Batch b0 = batch(0, 0);
        Batch b1 = batch(0, 1);
        Batch b2 = batch(0, 2);
        w.write(b0);
        w.write(b1);
        await(() -> gate.started.get() == 1); // b0 in its step, b1 queued: the queue is full

        AtomicInteger mails = new AtomicInteger();
        List<TrainerWriterState> taken = new ArrayList<>();
        BooleanSupplier mail = checkpointAtThirdMail(w, mails, taken);
        FutureTask<Void> write =
                new FutureTask<>(
                        () -> {
                            w.write(b2, mail);
                            return null;
                        });
        Thread task = new Thread(write, "task");
        task.start();
        await(() -> mails.get() >= 3 && task.getState() == Thread.State.WAITING);
        assertThat(taken).as("the checkpoint waits for the running step").isEmpty();
        gate.open(1);
        write.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);

        TrainerWriterState state = taken.get(0);
        assertThat(state.counters().steps()).isEqualTo(1);
        assertThat(state.queued()).containsExactly(b1, b2);
        assertThat(w.queued()).as("the write queued its batch after the mail").isEqualTo(2);
        gate.open(2);
        await(() -> w.counters().steps() == 3);
        assertThat(gate.trained).containsExactly(b0, b1, b2);
    }

    /**
     * The end of the input waits for the last queued batches to train, running its task's mail
     * meanwhile: Flink goes on checkpointing until the task finishes, and a checkpoint taken then,
     * at a step boundary, holds the batches not trained yet. A wait that ran no mail timed out
     * every checkpoint behind a few long steps.
     */
    @Test
    void shouldTakeACheckpointWhileTheLastBatchesTrainAfterTheInputEnded() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 3), new FakeTrainerContext(0, 1));
        Batch b0 = batch(0, 0);
        Batch b1 = batch(0, 1);
        Batch b2 = batch(0, 2);
        w.write(b0);
        w.write(b1);
        w.write(b2);
        gate.open(1);
        await(() -> gate.started.get() == 2); // b0 trained, b1 in its step, b2 queued

        AtomicInteger mails = new AtomicInteger();
        List<TrainerWriterState> taken = new ArrayList<>();
        BooleanSupplier mail = checkpointAtThirdMail(w, mails, taken);
        FutureTask<Void> end =
                new FutureTask<>(
                        () -> {
                            w.endInput(mail);
                            return null;
                        });
        Thread task = new Thread(end, "task");
        task.start();
        await(() -> mails.get() >= 3 && task.getState() == Thread.State.WAITING);
        assertThat(end.isDone()).isFalse();
        gate.open(1); // b1's step ends: the checkpoint is taken at that boundary
        await(() -> !taken.isEmpty());
        TrainerWriterState state = taken.get(0);
        assertThat(state.counters().steps()).isEqualTo(2);
        assertThat(state.queued()).containsExactly(b2);
        gate.open(1);
        end.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(gate.trained).containsExactly(b0, b1, b2);
        assertThat(mails.get()).isGreaterThan(3);
    }

    /**
     * The task's mail as a waiting writer runs it: nothing in each slice but the third, which takes
     * checkpoint 1 (its barrier's mail) into {@code taken}; {@code mails} counts the slices.
     */
    private static BooleanSupplier checkpointAtThirdMail(
            TrainerSinkWriter w, AtomicInteger mails, List<TrainerWriterState> taken) {
        return () -> {
            if (mails.incrementAndGet() != 3) {
                return false; // no mail in this slice
            }
            try {
                taken.addAll(w.snapshotState(1));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return true;
        };
    }

    @Test
    void shouldLetStepsGoOnWhileTheCapturedModelIsWritten() throws Exception {
        Gate gate = new Gate();
        gate.writesWaitForSteps = 1;
        TrainerSinkWriter w = writer(sink(gate, 3), new FakeTrainerContext(0, 1));
        Batch b2 = batch(0, 2);
        w.write(batch(0, 0));
        w.write(batch(0, 1));
        w.write(b2);
        gate.open(1);
        await(() -> gate.started.get() == 2); // step 1 is running

        FutureTask<List<TrainerWriterState>> checkpoint =
                new FutureTask<>(() -> w.snapshotState(1));
        Thread taskThread = new Thread(checkpoint);
        taskThread.start();
        await(() -> taskThread.getState() == Thread.State.WAITING); // for step 1 to end
        gate.open(2);
        TrainerWriterState state = checkpoint.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(0);

        assertThat(gate.trained).as("step 2 ran while the state was written").hasSize(3);
        assertThat(state.consumerState())
                .as("the model as captured after step 1")
                .isEqualTo(ByteBuffer.allocate(8).putLong(2).array());
        assertThat(state.queued()).containsExactly(b2);
        assertThat(state.counters().steps()).isEqualTo(2);
    }

    @Test
    void shouldWriteTheDeviceSummaryAtEndOfInput() throws Exception {
        TrainerSinkWriter w =
                writer(sink(new SimulatedAccelerator.Factory(10), 2), new FakeTrainerContext(1, 2));
        long before = System.currentTimeMillis();
        w.write(batch(1, 0, SamplePath.FAST, SamplePath.FAST));
        w.write(batch(1, 1, SamplePath.SLOW, SamplePath.FAST));
        w.write(batch(1, 2, SamplePath.FAST, SamplePath.SLOW));
        w.endInput();
        long after = System.currentTimeMillis();

        DeviceSummary s = DeviceSummary.read(tmp.resolve("out/summary-device-1.json"));
        assertThat(s.device()).isEqualTo(1);
        assertThat(s.accelerator()).isEqualTo("simulated");
        assertThat(s.steps()).isEqualTo(3);
        assertThat(s.samples()).isEqualTo(6);
        assertThat(s.fast()).isEqualTo(4);
        assertThat(s.slow()).isEqualTo(2);
        assertThat(s.busySeconds()).isGreaterThanOrEqualTo(0.03);
        assertThat(s.waitSeconds()).isGreaterThanOrEqualTo(0);
        assertThat(s.firstLoss()).isNaN();
        assertThat(s.lastLoss()).isNaN();
        assertThat(s.firstStepStartMillis()).isBetween(before, s.lastStepEndMillis());
        assertThat(s.lastStepEndMillis()).isLessThanOrEqualTo(after);
        assertThat(s).isEqualTo(DeviceSummary.of(1, "simulated", w.counters(), null));
        assertThat(Files.readAllLines(tmp.resolve("trace/trace-device-1.csv"))).hasSize(6);
    }

    /**
     * Closing after a failure must not throw for a summary it cannot write (a full disk): Flink
     * answers an exception in its failure handling by stopping the whole TaskManager.
     */
    @Test
    void shouldCloseWithoutThrowingWhenTheSummaryCannotBeWritten() throws Exception {
        TrainerSinkWriter w =
                writer(sink(new SimulatedAccelerator.Factory(1), 2), new FakeTrainerContext(0, 1));
        w.write(batch(0, 0, SamplePath.FAST, SamplePath.FAST));
        // A folder where the summary file goes: writing it fails.
        Files.createDirectories(tmp.resolve("out/summary-device-0.json/x"));
        w.close();
        assertThat(tmp.resolve("out/summary-device-0.json")).isDirectory();
    }

    @Test
    void shouldRecordFirstAndLastLossOfTheAccelerator() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 2), new FakeTrainerContext(0, 1));
        gate.open(3);
        for (int i = 0; i < 3; i++) {
            w.write(batch(0, i));
        }
        w.endInput();
        assertThat(w.counters().firstLoss()).isEqualTo(1.0);
        assertThat(w.counters().lastLoss()).isEqualTo(1.0 / 3);
    }

    @Test
    void shouldFailTheNextFlushWhenAStepThrows() throws Exception {
        TrainerSinkWriter w = writer(sink(new Failing(1), 2), new FakeTrainerContext(0, 1));
        w.write(batch(0, 0));
        w.write(batch(0, 1));
        assertTimeoutPreemptively(
                TIMEOUT,
                () ->
                        assertThatThrownBy(() -> w.endInput())
                                .isInstanceOf(IOException.class)
                                .hasMessageContaining("device 0: training step 1 failed")
                                .hasRootCauseMessage("simulated device fault"));
        assertThatThrownBy(() -> w.write(batch(0, 2))).isInstanceOf(IOException.class);
    }

    @Test
    void shouldWakeAWriteBlockedOnAFullQueueWhenAStepThrows() throws Exception {
        TrainerSinkWriter w = writer(sink(new Failing(0), 1), new FakeTrainerContext(0, 1));
        w.write(batch(0, 0));
        // Writes until one blocks on the full queue (a few more return while the accelerator
        // prepares) and then wakes with the failure.
        assertTimeoutPreemptively(
                TIMEOUT,
                () ->
                        assertThatThrownBy(
                                        () -> {
                                            for (int i = 1; ; i++) {
                                                w.write(batch(0, i));
                                            }
                                        })
                                .isInstanceOf(IOException.class)
                                .hasMessageContaining("training step 0 failed"));
    }

    @Test
    void shouldRejectABatchOfAnotherDevice() throws Exception {
        TrainerSinkWriter w = writer(sink(new Gate(), 2), new FakeTrainerContext(0, 2));
        assertThatThrownBy(() -> w.write(batch(1, 0)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("device 0 got batch 0 of device 1");
    }

    @Test
    void shouldRefuseToRestoreTheStateOfAnotherDevice() {
        TrainerWriterState other =
                new TrainerWriterState(0, List.of(), DeviceCounters.ZERO, new byte[0], 0);
        assertThatThrownBy(
                        () ->
                                new FakeTrainerContext(1, 2)
                                        .restore(sink(new Gate(), 2), List.of(other)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("subtask 1 got the state of devices [0]");
    }

    @Test
    void shouldStopARunningStepOnClose() throws Exception {
        Gate gate = new Gate();
        TrainerSinkWriter w = writer(sink(gate, 2), new FakeTrainerContext(0, 1));
        w.write(batch(0, 0));
        await(() -> gate.started.get() == 1);
        writers.remove(w);
        assertTimeoutPreemptively(TIMEOUT, w::close);
        assertThat(DeviceSummary.read(tmp.resolve("out/summary-device-0.json")).steps()).isZero();
    }

    @Test
    void shouldExportTheGaugesOfTheAcceleratorsGpuAndCloseItsMonitor() throws Exception {
        FakeGpuMonitor monitor = FakeGpuMonitor.constant(sample(40, 3 * GIB, 8 * GIB));
        FakeTrainerContext ctx = new FakeTrainerContext(0, 1);
        TrainerSinkWriter w = writer(sink(new OnGpu(5, monitor), 2), ctx);
        assertThat(thread("gpu-sampler-device-0")).as("sampler thread").isPresent();
        w.write(batch(0, 0));
        w.write(batch(0, 1));
        w.endInput();

        FakeTrainerContext.RecordingMetricGroup m = ctx.metrics;
        assertThat(m.gaugeValue(GpuMonitor.UTILIZATION_GAUGE)).isEqualTo(40);
        assertThat(m.gaugeValue(GpuMonitor.MEMORY_USED_GAUGE)).isEqualTo(3 * GIB);
        Path file = DeviceSummary.file(tmp.resolve("out"), 0);
        assertThat(Files.readString(file))
                .contains(
                        "\"gpu_util_mean_percent\": 40.0",
                        "\"gpu_mem_peak_bytes\": 3221225472",
                        "\"gpu_mem_total_bytes\": 8589934592");
        GpuStats gpu = DeviceSummary.read(file).gpu();
        assertThat(gpu.samples()).isPositive();
        assertThat(gpu.utilizationMeanPercent()).isEqualTo(40.0);
        assertThat(gpu.memoryPeakBytes()).isEqualTo(3 * GIB);
        assertThat(gpu.memoryTotalBytes()).isEqualTo(8 * GIB);

        writers.remove(w);
        w.close();
        assertThat(monitor.closed()).isTrue();
        assertThat(m.gaugeValue(GpuMonitor.UTILIZATION_GAUGE)).isEqualTo(-1);
        await(() -> thread("gpu-sampler-device-0").isEmpty());
    }

    @Test
    void shouldSummariseTheMeanUtilisationAndPeakMemoryOfTheGpuReadings() throws Exception {
        FakeGpuMonitor monitor =
                FakeGpuMonitor.scripted(
                        sample(20, 1 * GIB, 8 * GIB),
                        sample(70, 3 * GIB, 8 * GIB),
                        sample(30, 2 * GIB, 8 * GIB));
        TrainerSinkWriter w = writer(sink(new OnGpu(1, monitor), 2), new FakeTrainerContext(0, 1));
        w.write(batch(0, 0));
        await(() -> monitor.reads() > 3); // all three read, then one without an answer
        w.endInput();

        GpuStats expected = new GpuStats(3, 40.0, 3 * GIB, 8 * GIB);
        assertThat(w.account().gpuStats()).contains(expected);
        DeviceSummary s = DeviceSummary.read(DeviceSummary.file(tmp.resolve("out"), 0));
        assertThat(s.gpu()).isEqualTo(expected);
        assertThat(s).isEqualTo(DeviceSummary.of(0, "gpu", w.counters(), expected));
    }

    @Test
    void shouldExportMinusOneGaugesAndNoGpuStatisticsWithoutAGpu() throws Exception {
        FakeTrainerContext ctx = new FakeTrainerContext(1, 2);
        TrainerSinkWriter w = writer(sink(new SimulatedAccelerator.Factory(1), 2), ctx);
        assertThat(thread("gpu-sampler-device-1")).as("sampler thread").isEmpty();
        w.write(batch(1, 0));
        w.endInput();

        assertThat(ctx.metrics.gaugeValue(GpuMonitor.UTILIZATION_GAUGE)).isEqualTo(-1);
        assertThat(ctx.metrics.gaugeValue(GpuMonitor.MEMORY_USED_GAUGE)).isEqualTo(-1L);
        assertThat(w.account().gpuStats()).isEmpty();
        Path file = DeviceSummary.file(tmp.resolve("out"), 1);
        assertThat(Files.readString(file))
                .contains(
                        "\"gpu_samples\": null, \"gpu_util_mean_percent\": null,"
                                + " \"gpu_mem_peak_bytes\": null, \"gpu_mem_total_bytes\": null}");
        assertThat(DeviceSummary.read(file).gpu()).isNull();
    }

    @Test
    void shouldTrainWithoutGpuMetricsWhenTheMonitorFailsToOpen() throws Exception {
        AcceleratorFactory broken =
                (device, devices) ->
                        new Accelerator() {
                            @Override
                            public StepResult train(Batch batch) {
                                return StepResult.noLoss(0);
                            }

                            @Override
                            public String kind() {
                                return "gpu";
                            }

                            @Override
                            public GpuMonitor gpuMonitor() {
                                throw new IllegalStateException("NVML exploded");
                            }
                        };
        FakeTrainerContext ctx = new FakeTrainerContext(0, 1);
        TrainerSinkWriter w = writer(sink(broken, 2), ctx);
        w.write(batch(0, 0));
        w.endInput();

        assertThat(w.counters().steps()).isEqualTo(1);
        assertThat(ctx.metrics.gaugeValue(GpuMonitor.UTILIZATION_GAUGE)).isEqualTo(-1);
        assertThat(DeviceSummary.read(DeviceSummary.file(tmp.resolve("out"), 0)).gpu()).isNull();
    }

    private TrainerSink sink(AcceleratorFactory accelerator, int queueDepth) {
        return TrainerSink.builder()
                .setAccelerator(accelerator)
                .optQueueDepth(queueDepth)
                .optOutputDir(tmp.resolve("out"))
                .optTraceDir(tmp.resolve("trace"))
                .optRecipe(TestBatches.RECIPE)
                .build();
    }

    /** A writer whose accelerator has prepared: its queue holds its own depth from the start. */
    private TrainerSinkWriter writer(TrainerSink sink, FakeTrainerContext ctx)
            throws IOException, InterruptedException {
        TrainerSinkWriter w = preparing(sink, ctx);
        await(w::ready);
        return w;
    }

    /** A writer, its accelerator perhaps still preparing. */
    /** A writer of depth 2 whose task restores while {@code restoring} holds. */
    private TrainerSinkWriter restoringWriter(Gate gate, AtomicBoolean restoring) throws Exception {
        TrainerSinkWriter w = writer(sink(gate, 2), new FakeTrainerContext(0, 1));
        w.account().queue().whileRestoring(restoring::get);
        return w;
    }

    private TrainerSinkWriter preparing(TrainerSink sink, FakeTrainerContext ctx)
            throws IOException {
        TrainerSinkWriter w = ctx.trainer(sink);
        writers.add(w);
        return w;
    }

    private static void writeUnchecked(TrainerSinkWriter w, Batch b) {
        try {
            w.write(b);
        } catch (IOException | InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    private static Optional<Thread> thread(String name) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(name) && t.isAlive())
                .findFirst();
    }

    /** Polls {@code condition} until it holds; fails after {@link #TIMEOUT}. */
    private static void await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within " + TIMEOUT);
            }
            Thread.sleep(2);
        }
    }

    /**
     * A device trace's lines without the step's start and end millis, which must be a span of the
     * wall clock.
     */
    private static List<String> withoutStepTimes(Path traceFile) throws IOException {
        List<String> lines = new ArrayList<>();
        for (String line : Files.readAllLines(traceFile)) {
            int end = line.lastIndexOf(',');
            int start = line.lastIndexOf(',', end - 1);
            long from = Long.parseLong(line.substring(start + 1, end));
            long to = Long.parseLong(line.substring(end + 1));
            assertThat(from).as(line).isPositive().isLessThanOrEqualTo(to);
            lines.add(line.substring(0, start));
        }
        return lines;
    }
}
