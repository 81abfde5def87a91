package io.minato.job;

import java.util.List;

/**
 * The demo: what {@code train} with no arguments runs (and so {@code scripts/run} with none), on
 * the generated KiTS19-like demo set. The demo set has 32 training cases, 16 steps of batch 2 an
 * epoch on one device: 60 epochs are 960 steps at the learning rate 0.1, decayed tenfold after step
 * 800 for the last 10 epochs (the MLPerf reference's MultiStepLR), so that the saved model is not
 * wherever the last steps at the full rate happened to leave it. It learns the kidney (Dice
 * 0.43-0.47, kidney 0.87-0.94 in three runs; about two minutes on 2 cores); 30 epochs left the
 * kidney half learned in some runs. Options given instead replace all of it.
 */
final class DemoSchedule {
    static final int EPOCHS = 60;
    static final long DECAY_STEP = 800;
    static final String DECAY_FACTOR = "0.1";

    private DemoSchedule() {}

    /** The demo's options, as a user would type them (and as its run directory keeps them). */
    static List<String> args() {
        return List.of(
                "--epochs",
                Integer.toString(EPOCHS),
                "--lr-decay-steps",
                Long.toString(DECAY_STEP),
                "--lr-decay-factor",
                DECAY_FACTOR);
    }

    /** The line that says so, and how to train longer. */
    static String notice() {
        return "the demo: "
                + EPOCHS
                + " epochs on the demo set, learning rate x "
                + DECAY_FACTOR
                + " after step "
                + DECAY_STEP
                + "; train longer with scripts/run train --epochs N --lr-decay-steps S"
                + " --lr-decay-factor 0.1 (16 steps an epoch; S about 5/6 of N x 16)";
    }
}
