package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.loader.WorkerScheduler;
import io.minato.loader.pacing.WithCoordinator;
import io.minato.sample.Batch;
import io.minato.spi.BatchSink;
import io.minato.trainer.gpu.FlinkGpus;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.common.JobInfo;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;

/**
 * The end of the dataflow: one subtask per device, a bounded batch queue ({@link DeviceQueue}) in
 * front of either a trainer ({@link Builder#setAccelerator}: a DJL model or a simulated step) or a
 * server for a PyTorch training process ({@link Builder#setServer}), with the queue, counters and
 * the consumer's state (a model, a served set) in Flink checkpoints. Run it with parallelism =
 * devices, routing batches of device i to subtask i ({@link #trainOn}).
 *
 * <p>A sink in the dataflow's sense, built as an operator ({@link TrainerOperator}) rather than a
 * Sink V2: a sink writer is not given the task's runtime context, and with it the GPUs of Flink's
 * external resource framework ({@link FlinkGpus}).
 */
public final class TrainerSink implements BatchSink, Serializable {
    private static final long serialVersionUID = 1L;

    /** The operator's name, in the web UI and in metric names. */
    public static final String NAME = "TrainerSink";

    /**
     * Accumulator: samples the trainers prepared again because they arrived without their patch
     * (after a restore: a checkpoint keeps identities). Anything else is a sample prepared twice.
     */
    public static final String PREPARED_AGAIN = "samplesPreparedAgain";

    /**
     * The account of the job's checkpoints and restores that its trainers' coordinator keeps in the
     * output folder: completed, failed, timed_out, longest_pending_s, restores.
     */
    public static final String CHECKPOINTS_FILE = "checkpoints.json";

    /**
     * Failures since the last completed checkpoint a job recovers from, by default: a lost
     * TaskManager alone may cost several (seen: 4 within 2.4 s, each restart that Flink placed on
     * its slots failing until it was declared lost).
     */
    public static final int DEFAULT_RESTARTS_WITHOUT_CHECKPOINT = 10;

    /** Batches a device's queue holds, the one in training included: double buffering. */
    public static final int DEFAULT_QUEUE_DEPTH = 2;

    private final DeviceFactory devices;
    private final int queueDepth;
    private final SampleRecipe recipe; // null: every sample must arrive with its patch
    // Strings: java.nio.file.Path is not Serializable. Null when not configured.
    private final String outputDir;
    private final String traceDir;
    private final RunEnd runEnd; // null: none
    private final boolean skipBadSamples;
    private final int restartsWithoutCheckpoint;

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
        this.devices = b.devices;
        this.queueDepth = b.queueDepth;
        this.recipe = b.recipe;
        this.outputDir = b.outputDir == null ? null : b.outputDir.toString();
        this.traceDir = b.traceDir == null ? null : b.traceDir.toString();
        this.runEnd = b.runEnd;
        this.skipBadSamples = b.skipBadSamples;
        this.restartsWithoutCheckpoint = b.restartsWithoutCheckpoint;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Whether a sample prepared again whose source went bad is left out (else it fails). */
    boolean skipBadSamples() {
        return skipBadSamples;
    }

    /** The run directory the trainers write into; null when not configured. */
    String outputDir() {
        return outputDir;
    }

    /**
     * Whether each device must always get the same samples ({@link
     * DeviceFactory#keepsSamplesPerDevice}): the loader then deals them by sample.
     */
    @Override
    public boolean keepsSamplesPerDevice() {
        return devices.keepsSamplesPerDevice();
    }

    public int queueDepth() {
        return queueDepth;
    }

    /**
     * Adds the trainers behind {@code batches}, named {@code TrainerSink} (chained to the operator
     * before it where Flink can); the caller sets the uid and the parallelism, which must be the
     * number of devices, and routes batches of device i to subtask i.
     */
    @Override
    public SingleOutputStreamOperator<Void> trainOn(DataStream<Batch> batches) {
        // A keyed stream routes device i's batches to subtask i; transformed as keyed, each
        // trainer would also get a keyed state backend (a RocksDB instance) it never uses, to
        // open at every start and snapshot at every checkpoint. Keep the routing only.
        DataStream<Batch> routed =
                batches instanceof KeyedStream<Batch, ?>
                        ? new DataStream<>(
                                batches.getExecutionEnvironment(), batches.getTransformation())
                        : batches;
        return routed.transform(
                NAME,
                Types.VOID,
                WithCoordinator.of(
                        new TrainerOperator(this),
                        (name, id) ->
                                new TrainerCoordinator.Provider(
                                        id, outputDir, restartsWithoutCheckpoint)));
    }

    /**
     * This subtask's checkpointed state from {@code states}, or null after none.
     *
     * @throws IOException when the states are another device's (another parallelism)
     */
    static TrainerWriterState restoredState(int device, List<TrainerWriterState> states)
            throws IOException {
        if (states.size() > 1 || (states.size() == 1 && states.get(0).device() != device)) {
            List<Integer> devices = states.stream().map(TrainerWriterState::device).toList();
            throw new IOException(
                    "trainer sink subtask "
                            + device
                            + " got the state of devices "
                            + devices
                            + ": restore with the parallelism (number of devices) of the"
                            + " checkpoint");
        }
        return states.isEmpty() ? null : states.get(0);
    }

    /**
     * The device of subtask {@code task} ({@code gpus}: what Flink's external resource framework
     * gave this TaskManager), using {@code threads} CPU threads (0: the device's default), restored
     * from {@code restored} (null: a fresh start), meeting the other devices through {@code
     * replicas}.
     */
    DeviceWriter createWriter(
            TaskInfo task,
            JobInfo job,
            MetricGroup metrics,
            FlinkGpus gpus,
            int threads,
            Replicas replicas,
            TrainerWriterState restored)
            throws IOException {
        // Devices of one run attempt meet in one group; a restart gets a fresh one.
        String group = WorkerScheduler.key(job.getJobId().toString(), task.getAttemptNumber());
        DeviceAccount.Context context =
                new DeviceAccount.Context(
                        task.getIndexOfThisSubtask(),
                        task.getNumberOfParallelSubtasks(),
                        group,
                        replicas,
                        queueDepth,
                        recipe,
                        traceDir == null ? null : Path.of(traceDir),
                        outputDir == null ? null : Path.of(outputDir),
                        metrics,
                        restored,
                        runEnd);
        return devices.create(context, gpus, threads);
    }

    /** DJL trainers (or simulated ones): a {@link TrainerSinkWriter} over each accelerator. */
    private record Trainers(AcceleratorFactory accelerator) implements DeviceFactory {
        @Override
        public DeviceWriter create(DeviceAccount.Context context, FlinkGpus gpus, int threads)
                throws IOException {
            int device = context.device();
            Accelerator acc;
            try {
                acc =
                        accelerator.create(
                                device,
                                context.devices(),
                                gpus.claimingThrough(
                                        context.replicas().gpuClaim(context.groupId())));
                acc.useThreads(threads);
            } catch (Exception e) {
                throw new IOException(
                        "device " + device + ": cannot create the accelerator: " + e, e);
            }
            try {
                return new TrainerSinkWriter(context, acc);
            } catch (IOException | RuntimeException e) {
                try {
                    acc.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
        }
    }

    /** Builds a {@link TrainerSink}: {@code set*} is required, {@code opt*} optional. */
    public static final class Builder {
        private DeviceFactory devices;
        private int queueDepth = DEFAULT_QUEUE_DEPTH;
        private Path outputDir;
        private Path traceDir;
        private SampleRecipe recipe;
        private RunEnd runEnd;
        private boolean skipBadSamples;
        private int restartsWithoutCheckpoint = DEFAULT_RESTARTS_WITHOUT_CHECKPOINT;

        private Builder() {}

        /**
         * Trains on each device's batches with its accelerator, e.g. {@link
         * SimulatedAccelerator#parse}; the other choice is {@link #setServer}.
         */
        public Builder setAccelerator(AcceleratorFactory accelerator) {
            this.devices = new Trainers(Objects.requireNonNull(accelerator, "accelerator"));
            return this;
        }

        /**
         * Serves each device's batches to a training process outside the job ({@link
         * io.minato.trainer.serve.ServingDevice}); the other choice is {@link #setAccelerator}.
         */
        public Builder setServer(DeviceFactory server) {
            this.devices = Objects.requireNonNull(server, "server");
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

        /**
         * {@code --on-bad-sample skip}: a sample the trainers prepare again (after a restore) whose
         * source went bad meanwhile is left out and its source quarantined, as the workers do;
         * default false, the job fails in one line.
         */
        public Builder optSkipBadSamples(boolean skip) {
            this.skipBadSamples = skip;
            return this;
        }

        /**
         * Failures since the job's last completed checkpoint it recovers from: one more stops it,
         * with the last failure as the cause ({@link RestartsRunOut}); default {@value
         * #DEFAULT_RESTARTS_WITHOUT_CHECKPOINT}. Flink's restart strategy decides the delays and
         * may stop the job earlier.
         */
        public Builder optRestartsWithoutCheckpoint(int restarts) {
            if (restarts < 0) {
                throw new IllegalArgumentException("restarts must be >= 0: " + restarts);
            }
            this.restartsWithoutCheckpoint = restarts;
            return this;
        }

        /** Runs once after the run's last step, when the output folder holds every summary. */
        public Builder optOnRunEnd(RunEnd runEnd) {
            this.runEnd = Objects.requireNonNull(runEnd, "runEnd");
            return this;
        }

        public TrainerSink build() {
            if (devices == null) {
                throw new IllegalStateException(
                        "TrainerSink needs setAccelerator(...) or setServer(...)");
            }
            return new TrainerSink(this);
        }
    }
}
