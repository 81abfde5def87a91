package io.minato.job.workload;

import io.minato.job.report.RunReport;
import java.nio.file.Path;
import java.util.List;

/**
 * A data folder as a run found it, whichever the workload: its samples counted, those held out for
 * evaluation, and the inputs left out as bad.
 */
public interface DataSplit {

    /** The data folder. */
    Path dir();

    /** Samples in the data folder, bad ones included. */
    int total();

    /** Samples held out for evaluation, as asked. */
    int eval();

    /** The held-out samples the evaluation scores. */
    List<?> held();

    /** Inputs left out as bad before the run. */
    List<RunReport.Quarantine> quarantine();
}
