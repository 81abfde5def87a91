package org.apache.flink.runtime.operators.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.loader.pacing.JobQueues;
import io.minato.loader.pacing.PacingCoordinator;
import io.minato.loader.pacing.QueueCoordinator;
import io.minato.loader.pacing.QueueReport;
import io.minato.loader.pacing.WorkerRunning;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinatorTestingUtils;
import org.apache.flink.runtime.concurrent.ComponentMainThreadExecutor;
import org.apache.flink.runtime.concurrent.ComponentMainThreadExecutorServiceAdapter;
import org.apache.flink.runtime.executiongraph.TaskInformation;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The workers' coordinator inside Flink 2.3's own {@link OperatorCoordinatorHolder}, driven as the
 * JobManager drives it when a worker's TaskManager is lost in the middle of a checkpoint: in this
 * package because the holder's factory for tests is package-private. Flink holds back an event for
 * a subtask whose checkpoint is under way; its failover then gives the subtask a new gateway and
 * drops the old one with what it held back, neither sent nor failed, and the next coordinator
 * checkpoint waits for those events for ever.
 */
class PacingCoordinatorFailoverTest {
    private static final Duration PATIENCE = Duration.ofSeconds(5);

    private final ScheduledExecutorService jobManager =
            Executors.newSingleThreadScheduledExecutor();
    private final List<Throwable> globalFailures = new ArrayList<>();

    @AfterEach
    void stop() {
        jobManager.shutdownNow();
    }

    @Test
    void shouldCheckpointAfterAWorkerFailedInTheMiddleOfACheckpoint() throws Exception {
        Coordinators c = started();
        EventReceivingTasks workers = c.workers();
        OperatorCoordinatorHolder pacing = c.pacing();
        OperatorCoordinatorHolder trainers = c.trainers();
        onMain(
                () -> {
                    pacing.handleEventFromOperator(0, 0, new WorkerRunning());
                    trainers.handleEventFromOperator(0, 0, new QueueReport(0, 0, 2));
                    return null;
                });
        awaitTold(workers, new JobQueues(1, 1));

        // Checkpoint 1: the coordinator's part done, the worker's not yet.
        CompletableFuture<byte[]> first = new CompletableFuture<>();
        onMain(
                () -> {
                    pacing.checkpointCoordinator(1, first);
                    return null;
                });
        first.get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
        // The queue fills meanwhile; the view changes.
        reportAndLookTenTimes(trainers, 2);

        // The worker's TaskManager is lost: as SchedulerBase#restoreState does, checkpoint 1 is
        // aborted (the holder hears of it later, in another turn of the main thread) and the
        // worker reset.
        onMain(
                () -> {
                    pacing.executionAttemptFailed(0, 0, new Exception("TaskManager lost"));
                    return null;
                });
        onMain(
                () -> {
                    pacing.notifyCheckpointAborted(1);
                    pacing.subtaskReset(0, 0);
                    pacing.handleEventFromOperator(0, 0, new WorkerRunning()); // restarted
                    return null;
                });

        CompletableFuture<byte[]> second = new CompletableFuture<>();
        onMain(
                () -> {
                    pacing.checkpointCoordinator(2, second);
                    return null;
                });
        try {
            second.get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(
                    "checkpoint 2 still waits, after "
                            + PATIENCE
                            + ", for events sent to the failed attempt",
                    e);
        }
        // Checkpoint 2 completes and the worker hears the new view.
        onMain(
                () -> {
                    pacing.notifyCheckpointComplete(2);
                    return null;
                });
        awaitTold(workers, new JobQueues(1, 0));
        assertThat(globalFailures).isEmpty();
    }

    /**
     * A restore that finds a worker subtask finished runs none of its operators, and its task fails
     * on any event: Flink opens its gateway all the same. The coordinator tells only a worker that
     * said it runs.
     */
    @Test
    void shouldTellNoWorkerThatHasNotSaidItRuns() throws Exception {
        Coordinators c = started();
        EventReceivingTasks workers = c.workers();
        OperatorCoordinatorHolder pacing = c.pacing();
        OperatorCoordinatorHolder trainers = c.trainers();
        reportAndLookTenTimes(trainers, 0);
        reportAndLookTenTimes(trainers, 1);
        assertThat(workers.getSentEventsForSubtask(0)).isEmpty();

        onMain(
                () -> {
                    pacing.handleEventFromOperator(0, 0, new WorkerRunning());
                    return null;
                });
        awaitTold(workers, new JobQueues(1, 1));
        assertThat(globalFailures).isEmpty();
    }

    /**
     * Device 0's trainer reports {@code held} of 2 batches queued; then ten looks of the workers'
     * coordinator at the view.
     */
    private void reportAndLookTenTimes(OperatorCoordinatorHolder trainers, int held)
            throws Exception {
        onMain(
                () -> {
                    trainers.handleEventFromOperator(0, 0, new QueueReport(0, held, 2));
                    return null;
                });
        Thread.sleep(10 * PacingCoordinator.PERIOD_MILLIS);
    }

    /** The workers' and the trainers' coordinators, started on the JobManager's thread. */
    private record Coordinators(
            EventReceivingTasks workers,
            OperatorCoordinatorHolder pacing,
            OperatorCoordinatorHolder trainers) {}

    private Coordinators started() throws Exception {
        Thread main = jobManager.submit(Thread::currentThread).get();
        ComponentMainThreadExecutor mainThread =
                new ComponentMainThreadExecutorServiceAdapter(jobManager, main);
        CheckpointCoordinator checkpoints =
                new CheckpointCoordinatorTestingUtils.CheckpointCoordinatorBuilder()
                        .build(Executors.newSingleThreadScheduledExecutor());
        CoordinatorStore store = new CoordinatorStoreImpl();
        EventReceivingTasks workers = EventReceivingTasks.createForRunningTasks();
        OperatorID workerOperator = new OperatorID();
        OperatorCoordinatorHolder pacing =
                holder(
                        PacingCoordinator.provider(workerOperator, "workers"),
                        workerOperator,
                        store,
                        workers);
        OperatorID trainerOperator = new OperatorID();
        OperatorCoordinatorHolder trainers =
                holder(
                        QueueCoordinator.provider(trainerOperator),
                        trainerOperator,
                        store,
                        EventReceivingTasks.createForRunningTasks());
        onMain(
                () -> {
                    pacing.lazyInitialize(globalFailures::add, mainThread, checkpoints);
                    trainers.lazyInitialize(globalFailures::add, mainThread, checkpoints);
                    pacing.start();
                    trainers.start();
                    return null;
                });
        return new Coordinators(workers, pacing, trainers);
    }

    private OperatorCoordinatorHolder holder(
            OperatorCoordinator.Provider provider,
            OperatorID operator,
            CoordinatorStore store,
            EventReceivingTasks tasks)
            throws Exception {
        return OperatorCoordinatorHolder.create(
                operator,
                provider,
                store,
                "operator",
                getClass().getClassLoader(),
                1,
                128,
                tasks,
                false,
                new TaskInformation(
                        new JobVertexID(), "vertex", 1, 128, "invokable", new Configuration()),
                UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup());
    }

    private <T> T onMain(Callable<T> action) throws Exception {
        return jobManager.submit(action).get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void awaitTold(EventReceivingTasks workers, JobQueues view)
            throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!workers.getSentEventsForSubtask(0).contains(view)) {
            assertThat(System.nanoTime()).as("the worker was told " + view).isLessThan(deadline);
            Thread.sleep(10);
        }
    }
}
