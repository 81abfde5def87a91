package io.minato.trainer;

import io.minato.loader.HeadOfLine;
import io.minato.sample.Batch;

/**
 * A device's steps in time: the wait between one step's end and the next one's start, and how much
 * of that wait the loaders' head of line held the next batch back ({@link HeadOfLine}).
 */
final class StepClock {
    private final HeadOfLine headOfLine;
    // No step since start or restore: the gap before the next one is start-up, not waiting.
    private long lastStepEndNanos = -1;
    // The loaders' head-of-line clock when the last step ended: what of a wait it was held back.
    private long heldAtLastStepEnd;

    StepClock(HeadOfLine headOfLine) {
        this.headOfLine = headOfLine;
    }

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
        long heldBack = lastStepEndNanos < 0 ? 0 : headOfLine.heldNanos(start) - heldAtLastStepEnd;
        DeviceCounters after =
                before.plusStep(batch, result, wait, heldBack, startMillis, endMillis);
        lastStepEndNanos = end;
        heldAtLastStepEnd = headOfLine.heldNanos(end);
        return after;
    }
}
