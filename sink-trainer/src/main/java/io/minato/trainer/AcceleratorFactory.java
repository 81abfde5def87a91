package io.minato.trainer;

import io.minato.trainer.gpu.FlinkGpus;
import java.io.Serializable;

/**
 * Makes the accelerator of one sink subtask. Shipped with the job graph, so it carries
 * configuration only; the accelerator itself is created on the TaskManager.
 */
@FunctionalInterface
public interface AcceleratorFactory extends Serializable {

    /**
     * @param device this subtask's device, 0-based
     * @param devices how many devices (sink subtasks) train together
     */
    Accelerator create(int device, int devices) throws Exception;

    /**
     * As {@link #create(int, int)}, on a TaskManager that has {@code gpus} from Flink's external
     * resource framework (none on an embedded cluster, or where the TaskManagers' configuration has
     * no {@code external-resources: gpu}). A factory whose devices are Flink's takes its GPU from
     * there; the others ignore it.
     */
    default Accelerator create(int device, int devices, FlinkGpus gpus) throws Exception {
        return create(device, devices);
    }
}
