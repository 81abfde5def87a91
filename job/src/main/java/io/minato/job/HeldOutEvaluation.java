package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.HeldOut;
import io.minato.job.workload.TrainingSet;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.DjlAccelerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Serializable;
import java.nio.file.Path;

/**
 * The evaluation after a run that trained a model and held samples out: the model its first device
 * saved in the run directory, scored on the held-out samples on that device's kind (the GPU, or the
 * CPU). The client that waited for the run calls it ({@link TrainingReport}); a detached job's last
 * trainer calls it in its TaskManager ({@link DetachedReport}), so it travels with the job.
 *
 * @param samples the held-out samples, for the line that says what is evaluated
 * @param unit what that line calls them: "case(s)", "image(s)"
 */
record HeldOutEvaluation(
        HeldOut heldOut, int samples, String unit, DjlAccelerator.Factory trained, double width)
        implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The evaluation of a run of {@code set} trained by {@code accelerator}; null for none. */
    static HeldOutEvaluation of(TrainingSet set, AcceleratorFactory accelerator, double width) {
        if (!(accelerator instanceof DjlAccelerator.Factory factory) || set.held() == 0) {
            return null; // a simulated step or a PyTorch process: no model here to score
        }
        return new HeldOutEvaluation(set.heldOut(), set.held(), set.heldUnit(), factory, width);
    }

    /**
     * {@code outcome} with the score of the model saved in {@code run}; the line saying what is
     * evaluated and the progress lines to {@code err}.
     */
    RunReport.Outcome evaluated(RunReport.Outcome outcome, Path run, PrintWriter err)
            throws IOException, BadInputException {
        err.println("evaluating the trained model on " + samples + " held-out " + unit + " ...");
        err.flush();
        return heldOut.evaluated(
                outcome,
                new TrainingSet.Trained(
                        run.resolve("model-device-0"),
                        trained.settings().network(),
                        width,
                        trained.device(0)),
                err);
    }
}
