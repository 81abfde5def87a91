package io.minato.trainer;

import io.minato.sample.Batch;

/**
 * A device's steps in time: the wait between one step's end and the next one's start, and how much
 * of that wait the batch's loader held it back. The hold ({@link Batch#heldBackNanos}) ran up to
 * the batch's handout, which ends the wait whenever the device waited for it, so the last {@code
 * min(wait, hold)} of the wait was head-of-line and the rest the workers being behind.
 */
final class StepClock {
    // No step since start or restore: the gap before the next one is start-up, not waiting.
    private long lastStepEndNanos = -1;

    /** {@code before} plus a step over {@code batch} that ran from {@code start} to {@code end}. */
    DeviceCounters counted(
            DeviceCounters before,
            Batch batch,
            StepResult result,
            long start,
            long end,
            long startMillis,
            long endMillis) {
        long wait = lastStepEndNanos < 0 ? 0 : start - lastStepEndNanos;
        long heldBack = lastStepEndNanos < 0 ? 0 : batch.heldBackNanos();
        DeviceCounters after =
                before.plusStep(batch, result, wait, heldBack, startMillis, endMillis);
        lastStepEndNanos = end;
        return after;
    }
}
