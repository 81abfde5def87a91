package io.minato.loader.baseline;

import io.minato.loader.Receivers;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.StateInitializationContext;

/**
 * What the in-order baselines ({@link InOrderLoader}, {@link DjlLoader}) checkpoint: they number
 * batches globally at parallelism 1 and drain every full batch before the barrier, so their state
 * is the tasks of the partial batch and the number of the next batch.
 */
final class GlobalBatchState {
    private final ListState<SampleTask> tasks;
    private final ListState<Long> nextBatch;
    private final List<SampleTask> restoredTasks = new ArrayList<>();
    private long restoredNextBatch;

    /**
     * Registers the operator state ({@code tasksName} for the tasks, "nextBatch" for the number)
     * and reads it back after a restore.
     */
    GlobalBatchState(StateInitializationContext context, String tasksName) throws Exception {
        var store = context.getOperatorStateStore();
        tasks =
                store.getListState(
                        new ListStateDescriptor<>(tasksName, TypeInformation.of(SampleTask.class)));
        nextBatch = store.getListState(new ListStateDescriptor<>("nextBatch", Types.LONG));
        if (context.isRestored()) {
            for (SampleTask t : tasks.get()) {
                restoredTasks.add(t);
            }
            for (Long n : nextBatch.get()) {
                restoredNextBatch = Math.max(restoredNextBatch, n);
            }
        }
    }

    /** The partial batch's tasks at the restored checkpoint; empty on a fresh start. */
    List<SampleTask> restoredTasks() {
        return restoredTasks;
    }

    /** The next batch's number at the restored checkpoint; 0 on a fresh start. */
    long restoredNextBatch() {
        return restoredNextBatch;
    }

    void update(List<SampleTask> partialBatch, long next) throws Exception {
        tasks.update(partialBatch);
        nextBatch.update(List.of(next));
    }

    /**
     * Global batch {@code k} is device {@code k % devices}'s batch of step {@code k / devices}; its
     * patches wait in the handoff only if that device's trainer runs in this TaskManager. It
     * carries {@code heldBackNanos} ({@link InOrderBatches#handedOut}).
     */
    static Batch toDevice(
            long k,
            int devices,
            List<PreparedSample> samples,
            long heldBackNanos,
            Receivers trainers) {
        int device = (int) (k % devices);
        List<PreparedSample> routed = trainers.route(device, samples);
        return new Batch(device, k / devices, routed, heldBackNanos);
    }

    /** Fails an operator whose subtasks would each number batches from 0. */
    static void requireOneSubtask(int parallelism, String loader, String hint) {
        if (parallelism != 1) {
            throw new IllegalStateException(
                    "the "
                            + loader
                            + " numbers batches globally and must run at parallelism 1, not "
                            + parallelism
                            + hint);
        }
    }
}
