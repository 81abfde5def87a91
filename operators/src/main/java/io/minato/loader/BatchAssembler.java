package io.minato.loader;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.serde.SampleTypes;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * One device's batcher: holds its partial batch in keyed state (RocksDB in the job) and emits a
 * batch of B samples, fast and slow mixed in arrival order, as soon as B have arrived.
 */
public class BatchAssembler extends KeyedProcessFunction<Integer, PreparedSample, Batch> {
    private static final long serialVersionUID = 1L;

    private final DeviceKeys keys;
    private final int batchSize;

    private transient ListState<PreparedSample> pending;
    private transient ValueState<Integer> pendingCount;
    private transient ValueState<Long> nextSequence;

    public BatchAssembler(DeviceKeys keys, int batchSize) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be >= 1: " + batchSize);
        }
        this.keys = keys;
        this.batchSize = batchSize;
    }

    @Override
    public void open(OpenContext openContext) {
        var state = getRuntimeContext();
        pending =
                state.getListState(
                        new ListStateDescriptor<>("pending", SampleTypes.PREPARED_SAMPLE));
        pendingCount = state.getState(new ValueStateDescriptor<>("pendingCount", Types.INT));
        nextSequence = state.getState(new ValueStateDescriptor<>("nextSequence", Types.LONG));
    }

    @Override
    public void processElement(PreparedSample in, Context ctx, Collector<Batch> out)
            throws Exception {
        // A count beside the list, so that a sample's arrival appends without reading the list.
        int count = pendingCount.value() == null ? 0 : pendingCount.value();
        if (count + 1 < batchSize) {
            pending.add(in);
            pendingCount.update(count + 1);
            return;
        }
        List<PreparedSample> samples = new ArrayList<>(batchSize);
        for (PreparedSample s : pending.get()) {
            samples.add(s);
        }
        samples.add(in);
        long sequence = nextSequence.value() == null ? 0 : nextSequence.value();
        pending.clear();
        pendingCount.clear();
        nextSequence.update(sequence + 1);
        out.collect(new Batch(keys.deviceOf(ctx.getCurrentKey()), sequence, samples));
    }
}
