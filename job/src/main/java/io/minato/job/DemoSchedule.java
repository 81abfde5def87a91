package io.minato.job;

import io.minato.job.workload.DataSpec;
import io.minato.job.workload.Workloads;
import io.minato.trainer.TrainingSettings;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The demo: what {@code train} runs on the generated KiTS19-like demo set (no {@code --data}, the
 * default workload), and so {@code scripts/run} with no options. The demo set has 32 training
 * cases, 16 steps of batch 2 an epoch on one device: 60 epochs are 960 steps at the learning rate
 * 0.1, decayed tenfold after step 800 for the last 10 epochs (the MLPerf reference's MultiStepLR),
 * so that the saved model is not wherever the last steps at the full rate happened to leave it. It
 * learns the kidney (Dice 0.43-0.47, kidney 0.87-0.94 in three runs; 0.56 and 0.96 in a later one,
 * 223 s on 2 cores with oneDNN's AVX kernels); 30 epochs left the kidney half learned in some runs.
 * These are the defaults of {@code --epochs}, {@code --lr-decay-steps} and {@code
 * --lr-decay-factor} there; each option given replaces its own value only.
 */
final class DemoSchedule {
    static final int EPOCHS = 60;
    static final long DECAY_STEP = 800;
    static final float DECAY_FACTOR = 0.1f;

    private DemoSchedule() {}

    /** Whether the run trains the demo: the generated demo set of the default workload. */
    static boolean appliesTo(DataSpec data) {
        return data.demo() && data.workload().name().equals(Workloads.DEFAULT);
    }

    /** The line that says what the demo runs, and how to change it. */
    static String notice(int epochs, TrainingSettings optimizer) {
        String schedule = epochs + (epochs == 1 ? " epoch" : " epochs") + " on the demo set";
        if (optimizer == null) {
            return "the demo: " + schedule + "; --epochs changes it, --data trains on other data";
        }
        String decay =
                optimizer.decaySteps().isEmpty()
                        ? "no learning-rate decay"
                        : String.format(
                                Locale.ROOT,
                                "learning rate x %s after step %s",
                                optimizer.decayFactor(),
                                optimizer.decaySteps().stream()
                                        .map(String::valueOf)
                                        .collect(Collectors.joining(", ")));
        return "the demo: "
                + schedule
                + ", "
                + decay
                + " (16 steps an epoch); --epochs, --lr-decay-steps and --lr-decay-factor each"
                + " change only their own value, --data trains on other data";
    }
}
