package io.minato.spi;

import io.minato.sample.Batch;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;

/**
 * Where a loader job's batches go: one consumer subtask per device, each taking the batches dealt
 * to it, in the order they were built. The job's DJL trainers are one such sink ({@code
 * io.minato.trainer.TrainerSink}, which also serves each device's batches to a PyTorch training
 * process); a test or another framework can bring its own.
 */
public interface BatchSink {

    /**
     * Adds the consumers behind {@code batches}. The caller sets the returned operator's uid, its
     * slots and its parallelism, which is the number of devices, and routes batches of device i to
     * subtask i (a stream keyed by device).
     */
    SingleOutputStreamOperator<?> trainOn(DataStream<Batch> batches);

    /**
     * Whether each device must always get the same samples, whatever the workers' speed: for a
     * consumer outside the job that resumes from a checkpoint of its own (a training process per
     * device), the loader then deals samples to the devices by index rather than by arrival.
     */
    default boolean keepsSamplesPerDevice() {
        return false;
    }
}
