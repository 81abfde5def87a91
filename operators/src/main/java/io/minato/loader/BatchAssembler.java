package io.minato.loader;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.serde.SampleTypes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.StreamTask;

/**
 * A device's batcher (keyed by device): emits a batch of B samples, fast and slow mixed in arrival
 * order, as soon as B have arrived. At the end of the input each device's partial batch goes out as
 * a smaller last batch: the workers deal samples to the devices in turn ({@link DeviceDealer}), so
 * devices can end a few samples apart, and no sample is dropped for that.
 *
 * <p>Partial batches are keyed state (RocksDB in the job) in every checkpoint, but not on the hot
 * path, and as identities: a sample is a pure function of its task, so the checkpoint keeps the
 * task, never the 1-8 MiB patch, and the trainer prepares restored samples again. They wait in
 * memory and are written to keyed state in {@link #snapshotState}, which Flink runs before it
 * snapshots the keyed backend; a restore reads them back. (A KeyedProcessFunction has no such hook,
 * hence an operator.)
 */
public class BatchAssembler extends AbstractStreamOperator<Batch>
        implements OneInputStreamOperator<PreparedSample, Batch>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    private final DeviceKeys keys;
    private final int batchSize;

    private transient Map<Integer, List<PreparedSample>> pending;
    private transient Map<Integer, Long> nextSequence;
    private transient ListState<PreparedSample> pendingState;
    private transient ValueState<Long> sequenceState;
    private transient SampleHandoff.Registration receiving;

    public BatchAssembler(DeviceKeys keys, int batchSize) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be >= 1: " + batchSize);
        }
        this.keys = keys;
        this.batchSize = batchSize;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        pendingState =
                context.getKeyedStateStore()
                        .getListState(
                                new ListStateDescriptor<>(
                                        "pending", SampleTypes.PREPARED_SAMPLE_IDENTITY));
        sequenceState =
                context.getKeyedStateStore()
                        .getState(new ValueStateDescriptor<>("nextSequence", Types.LONG));
        pending = new HashMap<>();
        nextSequence = new HashMap<>();
        // What a failed attempt parked has no taker now.
        SampleHandoff.jvm()
                .startedAfter(
                        context.isRestored(), getRuntimeContext().getTaskInfo().getAttemptNumber());
        for (int key : ownedKeys()) {
            setCurrentKey(key);
            List<PreparedSample> samples = new ArrayList<>();
            for (PreparedSample s : pendingState.get()) {
                samples.add(s);
            }
            if (!samples.isEmpty()) {
                pending.put(key, samples);
            }
            Long sequence = sequenceState.value();
            if (sequence != null) {
                nextSequence.put(key, sequence);
            }
        }
    }

    @Override
    protected void setup(
            StreamTask<?, ?> containingTask,
            StreamConfig config,
            Output<StreamRecord<Batch>> output) {
        super.setup(containingTask, config, output);
        // Workers in this TaskManager may hand this batcher their patches in place: said at
        // setup, before the task opens the trainer chained to it (which takes a while).
        receiving =
                Receivers.register(getRuntimeContext(), getMetricGroup(), SampleHandoff.BATCHER);
    }

    @Override
    public void close() throws Exception {
        try {
            if (receiving != null) {
                receiving.close();
            }
        } finally {
            super.close();
        }
    }

    @Override
    public void processElement(StreamRecord<PreparedSample> record) {
        int key = (Integer) getCurrentKey();
        List<PreparedSample> samples =
                pending.computeIfAbsent(key, k -> new ArrayList<>(batchSize));
        samples.add(record.getValue());
        if (samples.size() == batchSize) {
            pending.remove(key);
            emit(key, samples);
        }
    }

    @Override
    public void endInput() {
        for (var partial : new TreeMap<>(pending).entrySet()) {
            emit(partial.getKey(), partial.getValue());
        }
        pending.clear();
    }

    private void emit(int key, List<PreparedSample> samples) {
        long sequence = nextSequence.getOrDefault(key, 0L);
        nextSequence.put(key, sequence + 1);
        output.collect(new StreamRecord<>(new Batch(keys.deviceOf(key), sequence, samples)));
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        for (int key : ownedKeys()) {
            setCurrentKey(key);
            List<PreparedSample> samples = pending.get(key);
            if (samples == null) {
                pendingState.clear();
            } else {
                pendingState.update(samples);
            }
            Long sequence = nextSequence.get(key);
            if (sequence != null) {
                sequenceState.update(sequence);
            }
        }
    }

    /** The device keys whose key groups this subtask holds. */
    private List<Integer> ownedKeys() {
        var task = getRuntimeContext().getTaskInfo();
        List<Integer> owned = new ArrayList<>();
        for (int d = 0; d < keys.devices(); d++) {
            int key = keys.keyOf(d);
            int subtask =
                    KeyGroupRangeAssignment.assignKeyToParallelOperator(
                            key,
                            task.getMaxNumberOfParallelSubtasks(),
                            task.getNumberOfParallelSubtasks());
            if (subtask == task.getIndexOfThisSubtask()) {
                owned.add(key);
            }
        }
        return owned;
    }
}
