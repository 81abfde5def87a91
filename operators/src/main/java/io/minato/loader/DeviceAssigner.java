package io.minato.loader;

import io.minato.sample.PreparedSample;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Gives each prepared sample, fast or slow, a device in arrival order, round robin, so that devices
 * receive equal shares (runs at parallelism 1; the position is checkpointed). Emits (device key,
 * sample) for {@code keyBy(f0)}.
 */
public class DeviceAssigner extends ProcessFunction<PreparedSample, Tuple2<Integer, PreparedSample>>
        implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    private final DeviceKeys keys;
    private long assigned;
    private transient ListState<Long> position;

    public DeviceAssigner(DeviceKeys keys) {
        this.keys = keys;
    }

    @Override
    public void processElement(
            PreparedSample sample, Context ctx, Collector<Tuple2<Integer, PreparedSample>> out) {
        int device = (int) (assigned++ % keys.devices());
        out.collect(Tuple2.of(keys.keyOf(device), sample));
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws Exception {
        position.update(java.util.List.of(assigned));
    }

    @Override
    public void initializeState(FunctionInitializationContext context) throws Exception {
        position =
                context.getOperatorStateStore()
                        .getListState(new ListStateDescriptor<>("assigned", Types.LONG));
        for (Long p : position.get()) {
            assigned = p;
        }
    }
}
