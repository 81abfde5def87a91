package io.minato.job.workload;

import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Serializable;

/**
 * How a trained model is scored on the samples a run held out, in whichever process scores it: the
 * client that waited for the run, or the TaskManager whose trainer ended a detached one. It travels
 * with the job, so it holds the held-out samples by their files' names and the settings that
 * prepare them, nothing open.
 */
public interface HeldOut extends Serializable {

    /**
     * {@code outcome} with the score of the {@code trained} model on the held-out samples; progress
     * lines to {@code err}.
     *
     * @throws BadInputException no such model there, or a held-out file gone bad
     */
    RunReport.Outcome evaluated(
            RunReport.Outcome outcome, TrainingSet.Trained trained, PrintWriter err)
            throws IOException, BadInputException;
}
