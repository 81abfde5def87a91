package io.minato.job;

import io.minato.job.report.ReportAssembly;
import io.minato.job.report.RunPlots;
import io.minato.job.report.RunReport;
import io.minato.loader.AccumulatorFiles;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainerSink;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The report of a job submitted with {@code flink run -d}, written by the job itself when it
 * finishes: no client waits for it, so the last trainer to close after its last step ({@link
 * TrainerSink.RunEnd}) reads the accumulators the operators wrote into the run directory as they
 * closed ({@link AccumulatorFiles}), and the trainers' summaries and traces there, and writes
 * {@code RUN/report.json} (and {@code --report}), the merged trace ({@code --trace}, else {@code
 * RUN/trace.csv}), {@code RUN/summary.txt}, the line an attached client prints, and the plot of the
 * preparation times ({@code prep-times.png}, unless {@code --no-plots}). What only a client has is
 * absent (the plot of busy and CPU over time needs its readings): the Dice of held-out cases (none
 * are evaluated; {@code scripts/run evaluate} does it from the saved model), the client's CPU and
 * memory readings. A report that cannot be written leaves its reason in {@code
 * RUN/report-error.txt} and the TaskManager's log; a failed or cancelled job writes none (its
 * checkpoints stay for {@code --resume}).
 *
 * <p>Not a Flink {@code JobStatusHook}: the JobManager deserializes those with its own classpath
 * when a job is submitted, and this class comes in the job's jar (seen: "Failed to deserialize
 * ExecutionPlan" from the session cluster).
 */
final class DetachedReport implements TrainerSink.RunEnd {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(DetachedReport.class);

    /** Where in the run directory the operators write their accumulators. */
    static final String ACCUMULATORS = "accumulators";

    private final ReportAssembly assembly;
    private final String report;
    private final String trace;
    private final boolean plots;

    /**
     * @param assembly the report's configuration, which the submitting client knows; the rest comes
     *     from the job's accumulators
     * @param report {@code --report}, or null
     * @param trace {@code --trace}, or null
     */
    DetachedReport(ReportAssembly assembly, Path report, Path trace, boolean plots) {
        this.assembly = assembly;
        this.report = report == null ? null : report.toAbsolutePath().toString();
        this.trace = trace == null ? null : trace.toAbsolutePath().toString();
        this.plots = plots;
    }

    @Override
    public void ended(Path dir) {
        try {
            RunReport r = write(dir);
            LOG.info("the run in {} finished: {}", dir, r.summaryLine());
        } catch (IOException | RuntimeException e) {
            LOG.error("the run in {} finished, but its report could not be written", dir, e);
            try {
                Files.writeString(
                        dir.resolve("report-error.txt"),
                        "the report could not be written: " + e.getMessage() + "\n",
                        StandardCharsets.UTF_8);
            } catch (IOException ignored) {
                // the log has it
            }
        }
    }

    /** Writes the report, trace and summary line of the finished run in {@code dir}. */
    RunReport write(Path dir) throws IOException {
        Map<String, Object> accumulators = AccumulatorFiles.read(dir.resolve(ACCUMULATORS));
        // No process of the run's own waited: start_s and the CPU time are null, and without a
        // recorded first request the run counts from the devices' first step.
        RunReport r = assembly.report(accumulators, dir);
        r.write(dir.resolve("report.json"));
        if (report != null) {
            r.write(Path.of(report));
        }
        TraceFiles.merge(dir, trace != null ? Path.of(trace) : dir.resolve("trace.csv"));
        // Before the summary, which is what a follower of the run waits for.
        if (plots) {
            try {
                RunPlots.write(
                        dir,
                        List.of(),
                        assembly.configuration().devices(),
                        Runtime.getRuntime().availableProcessors(),
                        TraceFiles.prepMillisByPath(dir));
            } catch (IOException | RuntimeException | LinkageError e) {
                // A TaskManager without fonts, say: the report stands without its plot.
                LOG.warn("no plots of the run in {}: {}", dir, e.toString());
            }
        }
        Files.writeString(
                dir.resolve("summary.txt"), r.summaryLine() + "\n", StandardCharsets.UTF_8);
        RunArgs.finished(dir);
        return r;
    }
}
