package io.minato.trainer;

/**
 * The model as it was when the running step began, taken by the trainer's thread before the step,
 * so that a checkpoint during a long step need not wait for it: the step's batch is still at the
 * queue's head and the counters are as before the step, so the state with this model is a
 * consistent cut. Shared by the checkpoints taken during the step; the model's copy is freed once
 * the step is over and the last of them has written it.
 */
final class StepStartCapture {
    /**
     * A step this long makes the next one start with a capture: a checkpoint would otherwise wait
     * for it, and a step longer than the checkpoint timeout (three intervals, at least 10 s) timed
     * checkpoints out. A copy of the model costs less than such a wait.
     */
    static final long LONG_STEP_NANOS = 1_000_000_000L;

    private final Accelerator.Capture capture;
    private int holders = 1; // the trainer's thread, until the step ends

    StepStartCapture(Accelerator.Capture capture) {
        this.capture = capture;
    }

    /**
     * The model of {@code accelerator} captured before a step that follows one of {@code
     * lastStepNanos}, where that is worth it ({@link Accelerator#capturesCheaply}, or the last step
     * was long); null where not.
     */
    static StepStartCapture ifWorth(Accelerator accelerator, long lastStepNanos) throws Exception {
        if (!accelerator.capturesCheaply() && lastStepNanos < LONG_STEP_NANOS) {
            return null;
        }
        return new StepStartCapture(accelerator.capture());
    }

    /** A hold on the capture for one checkpoint, released when it is closed. */
    synchronized Accelerator.Capture share() {
        holders++;
        return new Accelerator.Capture() {
            private boolean closed;

            @Override
            public byte[] bytes() throws Exception {
                return capture.bytes();
            }

            @Override
            public void close() {
                if (!closed) {
                    closed = true;
                    release();
                }
            }
        };
    }

    /** Gives up one hold; the last frees the copy. */
    synchronized void release() {
        if (--holders == 0) {
            capture.close();
        }
    }
}
