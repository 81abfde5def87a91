package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.loader.WorkerScheduler;
import io.minato.loader.pacing.QueueReport;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import io.minato.trainer.gpu.GpuMonitor;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import org.apache.flink.metrics.MetricGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every device keeps, whatever consumes its queue: its {@link DeviceQueue}, its counters and
 * their clock, its trace and summary ({@link DeviceOutputs}), its metrics, the samples it prepares
 * again, its place in the job's worker scheduling and progress, and the run's end once its last
 * device closes. A {@link TrainerSinkWriter} and a {@link io.minato.trainer.serve.ServingDevice}
 * each hold one.
 */
public final class DeviceAccount implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceAccount.class);

    /**
     * What the sink gives the device of one subtask.
     *
     * @param groupId the same for every device of one run (attempt)
     * @param replicas how this device finds the others, wherever they run
     * @param recipe how to prepare samples from their identities; null: every sample must arrive
     *     with its patch
     * @param traceDir null: no trace
     * @param outputDir null: no summary, no progress, no run end
     * @param restored the device's checkpointed state; null: a fresh start
     * @param runEnd what the run's last device to close runs; null: nothing
     */
    public record Context(
            int device,
            int devices,
            String groupId,
            Replicas replicas,
            int queueDepth,
            SampleRecipe recipe,
            Path traceDir,
            Path outputDir,
            MetricGroup metrics,
            TrainerWriterState restored,
            TrainerSink.RunEnd runEnd) {}

    /**
     * What the device's consumer tells its outputs: its kind, GPU, and what it keeps at the end.
     */
    public interface Outputs {
        /** The report's {@code accelerator.kind}. */
        String kind();

        /** The GPU the consumer uses, opened once; {@link GpuMonitor#absent()} by default. */
        default GpuMonitor gpuMonitor() {
            return GpuMonitor.absent();
        }

        /** Keeps what the run produced (a model) in {@code outputDir}; nothing by default. */
        default void finish(Path outputDir, int device) throws Exception {}
    }

    private final Context context;
    private final DeviceQueue queue;
    private final DeviceOutputs outputs;
    private final TrainerMetrics metrics;
    private final SamplesPreparedAgain preparedAgain;
    private final StepClock clock = new StepClock();
    private final WorkerScheduler.Registration scheduling;
    private volatile DeviceCounters counters; // written under the queue's lock
    private volatile boolean endedNormally;

    /**
     * @param consumer what the queue's admission asks about the consumer
     */
    public DeviceAccount(Context context, QueueAdmission.Consumer consumer, Outputs what)
            throws IOException {
        this.context = context;
        checkRestoredDevice(context);
        TrainerWriterState restored = context.restored();
        this.counters = restored == null ? DeviceCounters.ZERO : restored.counters();
        this.queue =
                new DeviceQueue(
                        context.device(),
                        context.queueDepth(),
                        consumer,
                        restored == null ? List.of() : restored.queued(),
                        context.metrics());
        this.outputs =
                new DeviceOutputs(
                        context.device(),
                        what,
                        context.traceDir(),
                        restored == null ? 0 : restored.traceLength(),
                        context.recipe(),
                        context.outputDir(),
                        context.metrics(),
                        this::counters);
        this.metrics = new TrainerMetrics(context.metrics(), counters, this::counters);
        this.preparedAgain = new SamplesPreparedAgain(context.device(), context.recipe(), metrics);
        // The worker scheduler of this TaskManager paces the preparation by how full the queues
        // are; the workers of others hear of this queue through the job (TrainerOperator).
        WorkerScheduler scheduler = WorkerScheduler.of(context.groupId(), context.metrics());
        scheduling = scheduler.queue(queue::held, context.queueDepth());
        if (context.outputDir() != null) {
            TrainingProgress.of(context.outputDir())
                    .register(context.device(), this::counters, scheduler);
        }
    }

    /** Refuses a restored state of another device: the sink restored with another parallelism. */
    public static void checkRestoredDevice(Context context) throws IOException {
        TrainerWriterState restored = context.restored();
        if (restored != null && restored.device() != context.device()) {
            throw new IOException(
                    "trainer sink subtask of device "
                            + context.device()
                            + " got the state of device "
                            + restored.device()
                            + ": the sink's parallelism must equal the number of devices");
        }
    }

    public Context context() {
        return context;
    }

    public int device() {
        return context.device();
    }

    public DeviceQueue queue() {
        return queue;
    }

    /** What this device has done so far. */
    public DeviceCounters counters() {
        return counters;
    }

    /** The device's queue now, as it tells the job's worker schedulers. */
    public QueueReport queueReport() {
        return new QueueReport(context.device(), queue.held(), context.queueDepth());
    }

    /**
     * The batch without the samples that {@code takes} refuses (kept: they are neither consumed nor
     * traced, and the report counts them dropped), with every patch present: samples that came as
     * identities prepared again, those whose source went bad left out.
     */
    public Batch materialized(Batch batch, Predicate<SampleTask> takes) throws Exception {
        List<PreparedSample> samples = batch.samples();
        List<PreparedSample> kept = null; // the batch as it is until a sample is left out
        for (int i = 0; i < samples.size(); i++) {
            PreparedSample s = samples.get(i);
            if (!takes.test(s.task())) {
                if (kept == null) {
                    kept = new ArrayList<>(samples.subList(0, i));
                }
            } else if (kept != null) {
                kept.add(s);
            }
        }
        return preparedAgain.materialized(kept == null ? batch : batch.withSamples(kept));
    }

    /**
     * Traces a completed step over {@code batch} (the trace first, so that a checkpoint's trace
     * length covers exactly its steps), then counts it (under the queue's lock).
     */
    public void stepped(
            Batch batch,
            long step,
            StepResult result,
            long start,
            long end,
            long startMillis,
            long endMillis)
            throws IOException {
        outputs.traceStep(batch, step, startMillis, endMillis);
        DeviceCounters before = counters;
        DeviceCounters after =
                clock.counted(before, batch, result, start, end, startMillis, endMillis);
        counters = after;
        metrics.step(before, after, batch.samples().size());
    }

    /** The state a checkpoint takes now (under the queue's lock), with the consumer's. */
    public TrainerWriterState state(byte[] consumerState) {
        return new TrainerWriterState(
                context.device(), queue.snapshot(), counters, consumerState, outputs.traceLength());
    }

    /** At the end of the input, once everything is consumed: the consumer's result, the summary. */
    public void finish() throws IOException {
        outputs.finish();
        endedNormally = true;
    }

    public boolean endedNormally() {
        return endedNormally;
    }

    /** Samples that arrived without their patch and were prepared here again. */
    public long preparedAgain() {
        return metrics.preparedAgain();
    }

    /**
     * Under {@code --on-bad-sample skip}: a sample this device prepares again (after a restore)
     * whose source went bad is left out and its source quarantined, as the workers do.
     */
    public void leaveOutBadSamples(SampleRecipe.LeftOut quarantine) {
        preparedAgain.leaveOutBadSamples(quarantine);
    }

    /** What this device's GPU read so far; empty without a GPU or reading. */
    public Optional<GpuStats> gpuStats() {
        return outputs.gpuStats();
    }

    /**
     * Leaves the scheduling, writes the summary and closes the trace, once the consumer stopped.
     */
    @Override
    public void close() throws IOException {
        scheduling.close();
        outputs.close();
    }

    /**
     * Runs the run's end in the last device to close after its last step, in whichever TaskManager:
     * then every summary is written, and every upstream operator has closed too (a task closes
     * after all its inputs ended, and they end when the tasks feeding them closed).
     */
    public void endRunIfLast() {
        if (context.runEnd() == null || !endedNormally || context.outputDir() == null) {
            return;
        }
        try {
            if (context.replicas().ended(context.groupId(), context.device(), context.devices())) {
                context.runEnd().ended(context.outputDir());
            }
        } catch (Exception e) {
            LOG.error(
                    "device {}: the run ended, but what follows its end failed",
                    context.device(),
                    e);
        }
    }
}
