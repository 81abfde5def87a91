package io.minato.loader;

import io.minato.sample.UnfinishedSample;
import org.apache.flink.runtime.io.network.api.writer.SubtaskStateMapper;
import org.apache.flink.runtime.plugable.SerializationDelegate;
import org.apache.flink.streaming.runtime.partitioner.StreamPartitioner;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The edge from the fast workers' {@link AugmentOperator#SLOW} output to the {@link SlowPath}: each
 * sample goes to the slow worker its fast worker chose ({@link UnfinishedSample#slowWorker}), one
 * in its own TaskManager when there is one, so that the preparation stays in place.
 *
 * <p>All-to-all, not pointwise ({@code rescale}): Flink 2.3 did not deliver unaligned checkpoint
 * barriers over the pointwise edge to a slow worker that waited for room in the handoff (the
 * devices' queues full while the training loop paused): the slow workers took checkpoint 1's
 * barrier only once the pause was over, and every checkpoint in between timed out. Over an
 * all-to-all edge they take it while they wait. A custom partitioner through {@code
 * partitionCustom} would be no better: Flink turns checkpoints aligned on such an edge.
 *
 * <p>In-flight samples restored onto other slow workers (a rescaled restore) may go anywhere: a
 * slow worker resumes a sample from its state's bytes, or starts it over when the state stayed in
 * the failed attempt's handoff.
 */
public final class SlowWorkerPartitioner extends StreamPartitioner<UnfinishedSample> {
    private static final long serialVersionUID = 1L;

    @Override
    public int selectChannel(SerializationDelegate<StreamRecord<UnfinishedSample>> record) {
        UnfinishedSample sample = record.getInstance().getValue();
        int worker = sample.slowWorker();
        if (worker < 0 || worker >= numberOfChannels) {
            throw new IllegalStateException(
                    "sample (epoch "
                            + sample.task().epoch()
                            + ", index "
                            + sample.task().index()
                            + ") was sent to slow worker "
                            + worker
                            + ", not one of the job's "
                            + numberOfChannels);
        }
        return worker;
    }

    @Override
    public StreamPartitioner<UnfinishedSample> copy() {
        return this; // no state of its own
    }

    @Override
    public SubtaskStateMapper getDownstreamSubtaskStateMapper() {
        return SubtaskStateMapper.ROUND_ROBIN;
    }

    @Override
    public boolean isPointwise() {
        return false;
    }

    @Override
    public String toString() {
        return "SLOW_WORKER";
    }
}
