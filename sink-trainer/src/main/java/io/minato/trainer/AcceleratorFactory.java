package io.minato.trainer;

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
}
