package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.trainer.gpu.GpuMonitor;
import java.nio.file.Path;

/**
 * One device's training step: a simulated sleep, or a DJL trainer. Driven by a single worker thread
 * of its {@link TrainerSinkWriter}, never concurrently.
 */
public interface Accelerator extends DeviceAccount.Outputs, AutoCloseable {

    /**
     * Trains on one batch; the writer fails the job with whatever this throws. Once this returns,
     * the batch's patch arrays go back to the {@link io.minato.spi.PatchPool} and later samples
     * overwrite them: copy whatever must outlive the step.
     */
    StepResult train(Batch batch) throws Exception;

    /**
     * Trains on {@code batch} as {@link #train(Batch)}, told the batch that comes next when the
     * writer already holds it (null otherwise): an accelerator may stage that one's bytes while the
     * device computes this step (a GPU runs the step's kernels while the host is free). The next
     * batch's patches stay untouched until its own step ends; it may still not come next (the job
     * fails over), so a staged batch is used only for that very batch.
     */
    default StepResult train(Batch batch, Batch next) throws Exception {
        return train(batch);
    }

    /** "simulated", "cpu" or "gpu": the report's {@code accelerator.kind}. */
    @Override
    String kind();

    /**
     * Opens a monitor of the GPU this accelerator trains on, for the writer's metrics and summary;
     * {@link GpuMonitor#absent()} (the default) when it trains on no GPU. The caller owns what it
     * gets and closes it (the {@link TrainerSinkWriter} does in its own close()); the accelerator
     * keeps no reference to it. Called once per writer, before the first step.
     */
    @Override
    default GpuMonitor gpuMonitor() {
        return GpuMonitor.absent();
    }

    /**
     * Whether the devices' replicas train in lockstep (synchronous data parallelism): the writer
     * then joins them in a {@link ReplicaGroup} and hands the membership to {@link #replicate}.
     */
    default boolean replicated() {
        return false;
    }

    /** Called once, before the first step, by a writer whose accelerator is {@link #replicated}. */
    default void replicate(ReplicaGroup.Member member) {}

    /**
     * How many CPU threads this accelerator's own operators may use: its share of its TaskManager's
     * cores ({@link TorchThreads}). Given before the first step; ignored by default.
     */
    default void useThreads(int threads) {}

    /**
     * Readies the device before the first step, on the thread that trains: for a model, builds it,
     * restores it and shares it with the replicas. The writer may snapshot meanwhile, so that the
     * first checkpoint after a restore need not wait for a cold start: {@link #snapshot} then gives
     * the state as restored (or none). Nothing by default.
     */
    default void prepare() throws Exception {}

    /**
     * A step without a batch, once this device is out of data while other replicas still train:
     * applies their update so that the replicas stay identical.
     *
     * @return false when no replica has data any more: training is over
     */
    default boolean idleStep() throws Exception {
        return false;
    }

    /**
     * A step for a batch whose every sample was left out as bad input, while this device's input
     * goes on: a replica joins the other replicas' step with no sample of its own and applies their
     * update (a step no replica had a sample for changes nothing); a device alone takes no step.
     */
    default void stepWithoutSamples() throws Exception {}

    /**
     * The model and optimizer state, taken at a step boundary, so that it rides in the checkpoint
     * with the batches still queued. Empty when there is no model.
     */
    default byte[] snapshot() throws Exception {
        return new byte[0];
    }

    /**
     * Takes the state of {@link #snapshot()} at a step boundary and writes it later: the writer
     * calls this while it holds the step, and {@link Capture#bytes()} once training goes on, so
     * that a large model's copy to the host and its encoding stall no step. By default the snapshot
     * itself, taken here.
     */
    default Capture capture() throws Exception {
        byte[] state = snapshot();
        return () -> state;
    }

    /**
     * Whether {@link #capture} costs next to nothing (a state that no step changes): the writer
     * then captures before every step, so that no checkpoint waits for one. Otherwise it does so
     * only before steps that follow a long one, where a copy of the model costs less than the wait.
     */
    default boolean capturesCheaply() {
        return false;
    }

    /** A state taken at a step boundary, written when asked; closed by whoever took it. */
    @FunctionalInterface
    interface Capture extends AutoCloseable {
        /** The state as {@link #snapshot()} would have returned it when captured. */
        byte[] bytes() throws Exception;

        /** Releases what the capture holds (a copy of the model on its device, say). */
        @Override
        default void close() {}
    }

    /** Restores what {@link #snapshot()} returned, before the first step after a failure. */
    default void restore(byte[] state) throws Exception {}

    /**
     * Called once at the end of input, after the last step, with the run's output folder: keep what
     * the run produced (the trained model). Nothing by default.
     */
    @Override
    default void finish(Path outputDir, int device) throws Exception {}

    /** Releases the device; no checked exception, so that closing never hides a step's failure. */
    @Override
    default void close() {}
}
