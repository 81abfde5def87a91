package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;

/**
 * What one device has done so far; immutable, so that a checkpoint and the summary read a
 * consistent copy. Busy time is what the accelerator reports per step; wait time is the gaps
 * between consecutive steps (start-up before the first step is not waiting), and {@code
 * headOfLineNanos} the part of it while a loader held a ready batch back behind an unfinished one
 * ({@link Batch#heldBackNanos}); the rest of the wait is the workers being behind. Times of day are
 * epoch millis (0: no step yet), durations nanos.
 *
 * <p>The first epoch (epoch 0, the one that meets every case cold) is told apart from the later
 * ones: {@code firstEpochEndMillis} is when the last step holding an epoch-0 sample ended, and
 * {@code samplesAtFirstEpochEnd} how many samples this device had trained by then.
 */
public record DeviceCounters(
        long steps,
        long fast,
        long slow,
        long busyNanos,
        long waitNanos,
        long headOfLineNanos,
        double firstLoss,
        double lastLoss,
        long firstStepStartMillis,
        long lastStepEndMillis,
        long firstEpochEndMillis,
        long samplesAtFirstEpochEnd) {

    public static final DeviceCounters ZERO =
            new DeviceCounters(0, 0, 0, 0, 0, 0, Double.NaN, Double.NaN, 0, 0, 0, 0);

    public long samples() {
        return fast + slow;
    }

    /**
     * These counters after one more step on {@code batch}, which the device waited {@code
     * waitNanos} for, {@code headOfLineNanos} of them while a ready batch was held back.
     */
    DeviceCounters plusStep(
            Batch batch,
            StepResult result,
            long waitNanos,
            long headOfLineNanos,
            long startMillis,
            long endMillis) {
        long f = 0;
        long s = 0;
        boolean firstEpoch = false;
        for (PreparedSample sample : batch.samples()) {
            if (sample.path() == SamplePath.FAST) {
                f++;
            } else {
                s++;
            }
            firstEpoch |= sample.task().epoch() == 0;
        }
        return new DeviceCounters(
                steps + 1,
                fast + f,
                slow + s,
                busyNanos + result.busyNanos(),
                this.waitNanos + waitNanos,
                this.headOfLineNanos + Math.min(Math.max(0, headOfLineNanos), waitNanos),
                steps == 0 ? result.loss() : firstLoss,
                result.loss(),
                steps == 0 ? startMillis : firstStepStartMillis,
                endMillis,
                firstEpoch ? endMillis : firstEpochEndMillis,
                firstEpoch ? samples() + f + s : samplesAtFirstEpochEnd);
    }
}
