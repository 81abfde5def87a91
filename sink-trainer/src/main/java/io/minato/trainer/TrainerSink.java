package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.loader.WorkerScheduler;
import io.minato.sample.Batch;
import io.minato.sample.SampleHandoff;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * The end of the dataflow: one subtask per device trains on that device's batches, behind a bounded
 * batch queue, with the queue, counters and model state in Flink checkpoints. Run it with
 * parallelism = devices, routing batches of device i to subtask i.
 */
public final class TrainerSink
        implements Sink<Batch>, SupportsWriterState<Batch, TrainerWriterState> {

    /** Batches a device's queue holds, the one in training included: double buffering. */
    public static final int DEFAULT_QUEUE_DEPTH = 2;

    private final AcceleratorFactory accelerator;
    private final int queueDepth;
    private final SampleRecipe recipe; // null: every sample must arrive with its patch
    // Strings: java.nio.file.Path is not Serializable. Null when not configured.
    private final String outputDir;
    private final String traceDir;
    private final RunEnd runEnd; // null: none

    /**
     * What to do once the run has ended: called with the output folder by the last device of a run
     * (attempt) to close after training its last step, when every upstream operator has closed as
     * well. For a job nobody waits for (a detached submission) to write its own report.
     */
    @FunctionalInterface
    public interface RunEnd extends java.io.Serializable {
        void ended(Path outputDir) throws Exception;
    }

    private TrainerSink(Builder b) {
        this.accelerator = b.accelerator;
        this.queueDepth = b.queueDepth;
        this.recipe = b.recipe;
        this.outputDir = b.outputDir == null ? null : b.outputDir.toString();
        this.traceDir = b.traceDir == null ? null : b.traceDir.toString();
        this.runEnd = b.runEnd;
    }

    public static Builder builder() {
        return new Builder();
    }

    public int queueDepth() {
        return queueDepth;
    }

    @Override
    public TrainerSinkWriter createWriter(WriterInitContext context) throws IOException {
        return newWriter(context, null);
    }

    @Override
    public TrainerSinkWriter restoreWriter(
            WriterInitContext context, Collection<TrainerWriterState> states) throws IOException {
        int device = context.getTaskInfo().getIndexOfThisSubtask();
        List<TrainerWriterState> mine = new ArrayList<>(states);
        if (mine.size() > 1 || (mine.size() == 1 && mine.get(0).device() != device)) {
            List<Integer> devices = mine.stream().map(TrainerWriterState::device).toList();
            throw new IOException(
                    "trainer sink subtask "
                            + device
                            + " got the state of devices "
                            + devices
                            + ": restore with the parallelism (number of devices) of the"
                            + " checkpoint");
        }
        // What the failed attempt parked has no taker now (the in-order loaders hand batches on).
        SampleHandoff.jvm().dropAll();
        return newWriter(context, mine.isEmpty() ? null : mine.get(0));
    }

    @Override
    public SimpleVersionedSerializer<TrainerWriterState> getWriterStateSerializer() {
        return new TrainerWriterStateSerializer();
    }

    private TrainerSinkWriter newWriter(WriterInitContext context, TrainerWriterState restored)
            throws IOException {
        TaskInfo task = context.getTaskInfo();
        int device = task.getIndexOfThisSubtask();
        Accelerator acc;
        try {
            acc = accelerator.create(device, task.getNumberOfParallelSubtasks());
        } catch (Exception e) {
            throw new IOException("device " + device + ": cannot create the accelerator: " + e, e);
        }
        try {
            // Replicas of one run attempt meet in one group; a restart gets a fresh one.
            String group =
                    WorkerScheduler.key(
                            context.getJobInfo().getJobId().toString(), task.getAttemptNumber());
            TrainerSinkWriter writer =
                    new TrainerSinkWriter(
                            device,
                            task.getNumberOfParallelSubtasks(),
                            group,
                            queueDepth,
                            acc,
                            recipe,
                            traceDir == null ? null : Path.of(traceDir),
                            outputDir == null ? null : Path.of(outputDir),
                            context.metricGroup(),
                            restored);
            writer.onRunEnd(runEnd);
            return writer;
        } catch (IOException | RuntimeException e) {
            try {
                acc.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Builds a {@link TrainerSink}: {@code set*} is required, {@code opt*} optional. */
    public static final class Builder {
        private AcceleratorFactory accelerator;
        private int queueDepth = DEFAULT_QUEUE_DEPTH;
        private Path outputDir;
        private Path traceDir;
        private SampleRecipe recipe;
        private RunEnd runEnd;

        private Builder() {}

        /** Makes each device's accelerator, e.g. {@link SimulatedAccelerator#parse}. */
        public Builder setAccelerator(AcceleratorFactory accelerator) {
            this.accelerator = Objects.requireNonNull(accelerator, "accelerator");
            return this;
        }

        /** Batches each device's queue holds, the one in training included; default 2. */
        public Builder optQueueDepth(int queueDepth) {
            if (queueDepth < 1) {
                throw new IllegalArgumentException("queue depth must be >= 1: " + queueDepth);
            }
            this.queueDepth = queueDepth;
            return this;
        }

        /** Where each device writes {@code summary-device-<d>.json} at the end; none by default. */
        public Builder optOutputDir(Path outputDir) {
            this.outputDir = Objects.requireNonNull(outputDir, "outputDir");
            return this;
        }

        /** Where each device appends {@code trace-device-<d>.csv}; no trace by default. */
        public Builder optTraceDir(Path traceDir) {
            this.traceDir = Objects.requireNonNull(traceDir, "traceDir");
            return this;
        }

        /**
         * How to prepare a sample from its identity: samples reach the trainer as identities after
         * a restore (checkpoints keep no patches) or from another TaskManager, and are prepared
         * again, bit-identically, before their step. Without it every sample must arrive with its
         * patch.
         */
        public Builder optRecipe(SampleRecipe recipe) {
            this.recipe = Objects.requireNonNull(recipe, "recipe");
            return this;
        }

        /** Runs once after the run's last step, when the output folder holds every summary. */
        public Builder optOnRunEnd(RunEnd runEnd) {
            this.runEnd = Objects.requireNonNull(runEnd, "runEnd");
            return this;
        }

        public TrainerSink build() {
            if (accelerator == null) {
                throw new IllegalStateException("TrainerSink needs setAccelerator(...)");
            }
            return new TrainerSink(this);
        }
    }
}
