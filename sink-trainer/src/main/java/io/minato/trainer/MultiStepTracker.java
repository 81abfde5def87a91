package io.minato.trainer;

import ai.djl.training.tracker.MultiFactorTracker;
import ai.djl.training.tracker.Tracker;
import ai.djl.training.tracker.WarmUpTracker;
import java.util.List;

/**
 * PyTorch's MultiStepLR as a DJL {@link Tracker}: {@code base} times {@code factor} once for each
 * milestone the update count has reached. It is the main tracker behind DJL's {@link
 * WarmUpTracker}, which hands it update counts from the end of the warm-up; the milestones here
 * count from there too.
 *
 * <p>Not DJL's {@link MultiFactorTracker}, which the schedules the train command takes do not fit:
 * it wants two milestones or more, each at least one update after the warm-up, and factors of at
 * most 1, and it keeps how far it got as state, so it answers right only for counts that never go
 * back (a restored run's do) and cannot be shared by replicas. This one is a function of the count.
 */
final class MultiStepTracker implements Tracker {
    private final float base;
    private final long[] milestones;
    private final float factor;

    /**
     * @param milestones increasing update counts (from the end of the warm-up) from which on one
     *     more factor applies
     */
    MultiStepTracker(float base, List<Long> milestones, float factor) {
        this.base = base;
        this.milestones = milestones.stream().mapToLong(Long::longValue).toArray();
        this.factor = factor;
    }

    @Override
    public float getNewValue(int numUpdate) {
        // In double, rounded once: the rate after several milestones is the float nearest to it.
        double value = base;
        for (long milestone : milestones) {
            if (numUpdate >= milestone) {
                value *= factor;
            }
        }
        return (float) value;
    }
}
