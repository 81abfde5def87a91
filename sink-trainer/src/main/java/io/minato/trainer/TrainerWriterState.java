package io.minato.trainer;

import io.minato.sample.Batch;
import java.util.List;

/**
 * A trainer sink subtask's checkpointed state, taken at a step boundary: the batches received but
 * not trained, the counters, the accelerator's model state and how much of the trace file those
 * steps wrote.
 */
public record TrainerWriterState(
        int device,
        List<Batch> queued,
        DeviceCounters counters,
        byte[] acceleratorState,
        long traceLength) {
    public TrainerWriterState {
        queued = List.copyOf(queued);
        if (traceLength < 0) {
            throw new IllegalArgumentException("traceLength must be >= 0: " + traceLength);
        }
    }
}
