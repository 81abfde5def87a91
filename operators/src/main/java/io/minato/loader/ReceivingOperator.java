package io.minato.loader;

import io.minato.sample.SampleHandoff;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.StreamTask;

/**
 * An operator that producers in its own TaskManager may hand their samples (or batches) to in
 * place, through this JVM's {@link SampleHandoff}, while only their identities travel: the slow
 * path, the batchers and the trainers. It says so at setup, as soon as its task exists and before
 * the task opens its chain (a trainer takes a while to open), and stops at close; producers then
 * send bytes ({@link Receivers}).
 */
public abstract class ReceivingOperator<OUT> extends AbstractStreamOperator<OUT> {
    private final String receiver;
    private transient SampleHandoff.Registration receiving;

    /**
     * @param receiver what it receives as ({@link SampleHandoff#SLOW_PATH}, {@link
     *     SampleHandoff#BATCHER}, {@link SampleHandoff#TRAINER}); null: nothing in place
     */
    protected ReceivingOperator(String receiver) {
        this.receiver = receiver;
    }

    @Override
    protected void setup(
            StreamTask<?, ?> containingTask,
            StreamConfig config,
            Output<StreamRecord<OUT>> output) {
        super.setup(containingTask, config, output);
        if (receiver != null) {
            receiving = Receivers.register(getRuntimeContext(), getMetricGroup(), receiver);
        }
    }

    /** Stops receiving in place, where a subclass's close wants it first; once is enough. */
    protected final void stopReceiving() {
        if (receiving != null) {
            receiving.close();
            receiving = null;
        }
    }

    @Override
    public void close() throws Exception {
        try {
            stopReceiving();
        } finally {
            super.close();
        }
    }
}
