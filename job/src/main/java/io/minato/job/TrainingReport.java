package io.minato.job;

import io.minato.job.report.RunPlots;
import io.minato.job.report.RunReport;
import io.minato.job.report.RunSampler;
import io.minato.job.workload.TrainingSet;
import io.minato.trainer.TraceFiles;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What an attached run does once its job has finished: evaluates the trained model on the held-out
 * samples, assembles the report ({@link io.minato.job.report.ReportAssembly}), names the inputs the
 * workers left out, writes the report, trace and plots asked for, and prints the summary line.
 */
final class TrainingReport {
    private final TrainingRun r;
    private final PrintWriter out;
    private final PrintWriter err;

    TrainingReport(TrainingRun r, PrintWriter out, PrintWriter err) {
        this.r = r;
        this.out = out;
        this.err = err;
    }

    void write(Map<String, Object> accumulators, RunReport.Measurements measured) throws Exception {
        RunPlan.Options o = r.options;
        TrainingSet set = r.set;
        Path run = r.run;
        RunReport.Outcome outcome = r.report.outcome(accumulators);
        if (r.evaluation != null) {
            outcome = r.evaluation.evaluated(outcome, run, err);
        }
        RunReport report = RunReport.build(r.report.configuration(), outcome, measured, run);
        // Inputs quarantined while the run prepared them: one line each, as before the run.
        for (RunReport.Quarantine q : outcome.quarantined()) {
            err.println("skipped: " + set.dir().resolve(q.file()) + ": " + q.reason());
        }
        if (o.report() != null) {
            report.write(o.report());
        }
        if (o.trace() != null) {
            TraceFiles.merge(run, o.trace());
        }
        if (o.plots()) {
            writePlots(run, measured.memory(), r.plan.devices.devices().size(), r.plan.cores, err);
        }
        out.println(report.summaryLine());
        out.flush();
    }

    /**
     * The run's own plots into its folder ({@link RunPlots}): usage over time where this process
     * sampled it (the embedded cluster), preparation times always. A plot that cannot be drawn
     * costs a warning line, never the run.
     */
    private static void writePlots(
            Path run, List<RunSampler.Sample> samples, int devices, int cores, PrintWriter err) {
        try {
            List<Path> written =
                    RunPlots.write(
                            run,
                            samples == null ? List.of() : samples,
                            devices,
                            cores,
                            TraceFiles.prepMillisByPath(run));
            if (!written.isEmpty()) {
                err.println(
                        "plots: "
                                + written.stream()
                                        .map(Path::toString)
                                        .collect(Collectors.joining(", ")));
            }
        } catch (IOException | RuntimeException e) {
            err.println("warning: no plots of this run: " + e.getMessage());
        }
        err.flush();
    }
}
