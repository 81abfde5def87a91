package io.minato.trainer;

import io.minato.sample.Batch;
import java.io.IOException;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * One device of the {@link TrainerSink}, as its operator drives it: a {@link DeviceQueue} in front
 * of a consumer, either a training step ({@link TrainerSinkWriter}, the DJL trainers) or a server
 * for a PyTorch training process ({@link io.minato.trainer.serve.ServingDevice}).
 */
public interface DeviceWriter extends AutoCloseable {

    /**
     * Queues {@code batch} as {@link DeviceQueue#put} does: waits while the queue is full, running
     * the task's mail meanwhile ({@code mail}: null for none).
     */
    default void write(Batch batch, BooleanSupplier mail) throws IOException, InterruptedException {
        account().queue().put(batch, mail);
    }

    /** Queues {@code batch}, waiting while the queue is full; runs no other work meanwhile. */
    default void write(Batch batch) throws IOException, InterruptedException {
        write(batch, null);
    }

    /** The device's state for checkpoint {@code checkpointId}: one entry. */
    List<TrainerWriterState> snapshotState(long checkpointId) throws IOException;

    /**
     * At the end of the input: consumes what is queued, keeps the result, writes the summary. While
     * it waits, it runs the task's mail ({@code mail}: null for none), so that checkpoints, which
     * Flink goes on taking until the task finishes, do not wait for the last steps.
     */
    void endInput(BooleanSupplier mail) throws IOException, InterruptedException;

    /** {@link #endInput(BooleanSupplier)} running no other work meanwhile. */
    default void endInput() throws IOException, InterruptedException {
        endInput(null);
    }

    /** Stops the consumer and releases what it holds; writes the summary once more. */
    @Override
    void close() throws IOException;

    /** What the device shares with every other kind: queue, counters, outputs. */
    DeviceAccount account();

    /** What this device has done so far. */
    default DeviceCounters counters() {
        return account().counters();
    }

    /** Batches held: queued plus the one being consumed. */
    default int queued() {
        return account().queue().held();
    }
}
