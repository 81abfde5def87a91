package io.minato.loader;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleHandoff;
import io.minato.sample.SampleTask;
import io.minato.sample.serde.SampleTypes;
import io.minato.spi.PatchPool;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
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
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

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
 *
 * <p>A large sample from another TaskManager comes in pieces ({@link SampleChunks}), in order
 * through one channel; once the last is there, the sample arrives as a whole one would. A
 * checkpoint taken between its pieces keeps it as an identity among the pending samples (the
 * trainer prepares it again after a restore) and its task among the key's dropped ones; the live
 * assembly goes on. After a restore, the rest of its pieces (replayed from the unaligned
 * checkpoint's channel state) are dropped until its last one has passed, and the set of dropped
 * tasks is in every checkpoint until then, for a second restore may replay them again.
 */
public class BatchAssembler extends ReceivingOperator<Batch>
        implements OneInputStreamOperator<PreparedSample, Batch>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    private final DeviceKeys keys;
    private final int batchSize;

    private transient Map<Integer, List<PreparedSample>> pending;
    private transient Map<Integer, Long> nextSequence;
    private transient Map<SampleTask, SampleChunks.Assembly> assembling;
    private transient Map<SampleTask, Integer> dropping;
    private transient ListState<PreparedSample> pendingState;
    private transient ListState<SampleTask> droppingState;
    private transient ValueState<Long> sequenceState;

    public BatchAssembler(DeviceKeys keys, int batchSize) {
        super(SampleHandoff.BATCHER);
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
        droppingState =
                context.getKeyedStateStore()
                        .getListState(
                                new ListStateDescriptor<>(
                                        "droppingPieces", SampleTypes.SAMPLE_TASK));
        pending = new HashMap<>();
        nextSequence = new HashMap<>();
        assembling = new LinkedHashMap<>();
        dropping = new HashMap<>();
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
            for (SampleTask task : droppingState.get()) {
                dropping.put(task, key);
            }
        }
    }

    @Override
    public void processElement(StreamRecord<PreparedSample> record) throws IOException {
        int key = (Integer) getCurrentKey();
        PreparedSample sample = record.getValue();
        if (sample.piece() == null) {
            arrived(key, sample);
            return;
        }
        SampleTask task = sample.task();
        if (dropping.containsKey(task)) {
            // A piece of a sample the restored checkpoint keeps as an identity.
            if (sample.piece().last()) {
                dropping.remove(task);
            }
            return;
        }
        SampleChunks.Assembly assembly = assembling.get(task);
        if (assembly == null) {
            assembly = new SampleChunks.Assembly(key, sample);
            if (!assembly.complete()) {
                assembling.put(task, assembly);
                return;
            }
        } else if (!assembly.add(sample)) {
            return;
        }
        assembling.remove(task);
        arrived(key, assembly.sample(PatchPool.jvm()));
    }

    /** A whole sample for device key {@code key}: into its batch, which goes out when full. */
    private void arrived(int key, PreparedSample sample) {
        List<PreparedSample> samples =
                pending.computeIfAbsent(key, k -> new ArrayList<>(batchSize));
        samples.add(sample);
        // More than a batch only after a restore kept partial samples among the pending ones.
        while (samples.size() >= batchSize) {
            List<PreparedSample> batch = new ArrayList<>(samples.subList(0, batchSize));
            samples.subList(0, batchSize).clear();
            emit(key, batch);
        }
        if (samples.isEmpty()) {
            pending.remove(key);
        }
    }

    @Override
    public void endInput() {
        if (!assembling.isEmpty()) {
            throw new IllegalStateException(
                    "the input ended with samples missing some of their pieces: "
                            + assembling.keySet());
        }
        for (var partial : new TreeMap<>(pending).entrySet()) {
            List<PreparedSample> samples = partial.getValue();
            for (int from = 0; from < samples.size(); from += batchSize) {
                emit(
                        partial.getKey(),
                        new ArrayList<>(
                                samples.subList(from, Math.min(samples.size(), from + batchSize))));
            }
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
            List<PreparedSample> samples = new ArrayList<>(pending.getOrDefault(key, List.of()));
            List<SampleTask> dropped = new ArrayList<>();
            for (var e : dropping.entrySet()) {
                if (e.getValue() == key) {
                    dropped.add(e.getKey());
                }
            }
            // A sample with some of its pieces: pending as an identity, the rest of its pieces
            // dropped after a restore.
            for (SampleChunks.Assembly partial : assembling.values()) {
                if (partial.key() == key) {
                    samples.add(partial.identity());
                    dropped.add(partial.identity().task());
                }
            }
            pendingState.update(samples);
            droppingState.update(dropped);
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
