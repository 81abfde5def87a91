package io.minato.trainer;

import io.minato.trainer.gpu.FlinkGpus;
import java.io.IOException;
import java.io.Serializable;

/**
 * Makes the device of one sink subtask: a DJL trainer from an {@link AcceleratorFactory}, or a
 * server for a training process. Shipped with the job graph, so it carries configuration only.
 */
public interface DeviceFactory extends Serializable {

    /**
     * @param gpus what Flink's external resource framework gave this TaskManager
     * @param threads the device's share of its TaskManager's cores, in CPU threads
     */
    DeviceWriter create(DeviceAccount.Context context, FlinkGpus gpus, int threads)
            throws IOException;

    /**
     * Whether each device must always get the same samples, whatever restores the job goes through:
     * it hands them to a process outside the job that remembers what it has trained. The workers
     * then deal samples by their position in the run, not in turn.
     */
    default boolean keepsSamplesPerDevice() {
        return false;
    }
}
