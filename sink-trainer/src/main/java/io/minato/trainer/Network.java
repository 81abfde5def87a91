package io.minato.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.loss.Loss;
import io.minato.sample.Batch;
import io.minato.spi.Shape3;
import java.io.Serializable;

/**
 * The model a {@link DjlAccelerator} trains and how a batch of prepared samples becomes its input
 * and labels: the trainer's part of a workload. Shipped with the job graph inside the accelerator's
 * settings, so it holds configuration only; the block is made on the TaskManager.
 */
public interface Network extends Serializable {

    /** The name the trained model is saved and loaded under. */
    String modelName();

    /** A fresh, uninitialised model. */
    Block newBlock();

    /** The training loss. */
    Loss newLoss();

    /** An input shape that initialises every parameter (their shapes must not depend on it). */
    Shape initShape();

    /**
     * The input array's shape for {@code batch} samples of input shape {@code patch}.
     *
     * @throws IllegalArgumentException a sample shape this network cannot take, saying why
     */
    Shape inputShape(int batch, Shape3 patch);

    /**
     * The batch's labels as the loss takes them, on {@code manager}'s device, read from {@code
     * targets}: every sample's target bytes, back to back, in a direct buffer.
     *
     * @throws IllegalArgumentException a target this network cannot train on
     */
    NDArray labels(Batch batch, java.nio.ByteBuffer targets, NDManager manager);
}
