package io.minato.trainer;

import io.minato.sample.Batch;
import java.util.List;

/**
 * A trainer sink subtask's checkpointed state: the batches queued but not consumed, the counters,
 * the consumer's own state (a trainer's model and optimizer, a server's served set) and how much of
 * the trace file the consumed batches wrote.
 */
public record TrainerWriterState(
        int device,
        List<Batch> queued,
        DeviceCounters counters,
        byte[] consumerState,
        long traceLength) {
    public TrainerWriterState {
        queued = List.copyOf(queued);
        if (traceLength < 0) {
            throw new IllegalArgumentException("traceLength must be >= 0: " + traceLength);
        }
    }
}
