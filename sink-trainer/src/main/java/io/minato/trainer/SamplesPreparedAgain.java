package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.sample.Batch;

/**
 * Prepares again, bit-identically, the samples of a batch that arrived as identities without their
 * patch (restored from a checkpoint, or prepared in another JVM): the loader's work, which the
 * trainer does before its step's clock starts.
 */
final class SamplesPreparedAgain {
    private final int device;
    private final SampleRecipe recipe; // null: samples must arrive with their patches
    private final TrainerMetrics metrics;
    private volatile SampleRecipe.LeftOut leftOut;

    SamplesPreparedAgain(int device, SampleRecipe recipe, TrainerMetrics metrics) {
        this.device = device;
        this.recipe = recipe;
        this.metrics = metrics;
    }

    /** The batch with every patch present; without the samples left out as bad input. */
    Batch materialized(Batch batch) throws Exception {
        int missing = SampleRecipe.missing(batch);
        if (missing == 0) {
            return batch;
        }
        if (recipe == null) {
            throw new IllegalStateException(
                    "device "
                            + device
                            + ": "
                            + missing
                            + " sample(s) of batch "
                            + batch.sequence()
                            + " arrived without their patch and the trainer sink has no recipe to"
                            + " prepare them (TrainerSink.builder().optRecipe)");
        }
        metrics.preparedAgain(missing);
        return recipe.materialize(batch, leftOut);
    }

    /**
     * Under {@code --on-bad-sample skip}: a sample prepared again whose source went bad is left out
     * and its source quarantined, as the workers do.
     */
    void leaveOutBadSamples(SampleRecipe.LeftOut quarantine) {
        leftOut = quarantine;
    }
}
