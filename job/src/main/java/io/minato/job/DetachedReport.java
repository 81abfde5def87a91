package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.job.report.ReportAssembly;
import io.minato.job.report.RunPlots;
import io.minato.job.report.RunReport;
import io.minato.loader.AccumulatorFiles;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainerSink;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The report of a job submitted with {@code flink run -d}, written by the job itself when it
 * finishes: no client waits for it, so the last trainer to close after its last step ({@link
 * TrainerSink.RunEnd}) reads the accumulators the operators wrote into the run directory as they
 * closed ({@link AccumulatorFiles}), and the trainers' summaries and traces there, and writes
 * {@code RUN/report.json} (and {@code --report}), the merged trace ({@code --trace}, else {@code
 * RUN/trace.csv}), {@code RUN/summary.txt}, the line an attached client prints, and the plots of
 * the accelerators' busy share over time, from the steps' times in the traces, and of the
 * preparation times ({@code usage.png}, {@code prep-times.png}, unless {@code --no-plots}). Before
 * the report, that trainer scores the saved model on the held-out samples ({@link
 * HeldOutEvaluation}) in its own TaskManager, its progress lines in that TaskManager's log; an
 * evaluation that fails leaves the report without its score and the reason in {@code
 * RUN/evaluation-error.txt}. What only a client has is absent: its CPU and memory readings, and
 * with them the CPU line of the usage plot. A report that cannot be written leaves its reason in
 * {@code RUN/report-error.txt} and the TaskManager's log; a failed or cancelled job writes none
 * (its checkpoints stay for {@code --resume}).
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

    /** Where the reason goes when the held-out evaluation fails. */
    static final String EVALUATION_ERROR = "evaluation-error.txt";

    private final ReportAssembly assembly;
    private final HeldOutEvaluation evaluation; // null: none
    private final String report;
    private final String trace;
    private final boolean plots;

    /**
     * @param assembly the report's configuration, which the submitting client knows; the rest comes
     *     from the job's accumulators
     * @param evaluation the held-out evaluation, or null
     * @param report {@code --report}, or null
     * @param trace {@code --trace}, or null
     */
    DetachedReport(
            ReportAssembly assembly,
            HeldOutEvaluation evaluation,
            Path report,
            Path trace,
            boolean plots) {
        this.assembly = assembly;
        this.evaluation = evaluation;
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
        RunReport.Outcome outcome = assembly.outcome(accumulators);
        if (evaluation != null) {
            outcome = evaluated(evaluation, outcome, dir);
        }
        // No process of the run's own waited: start_s and the CPU time are null, and without a
        // recorded first request the run counts from the devices' first step.
        RunReport r = RunReport.build(assembly.configuration(), outcome, dir);
        r.write(dir.resolve("report.json"));
        if (report != null) {
            r.write(Path.of(report));
        }
        TraceFiles.merge(dir, trace != null ? Path.of(trace) : dir.resolve("trace.csv"));
        // Before the summary, which is what a follower of the run waits for.
        if (plots) {
            try {
                TraceFiles.Timings timings = TraceFiles.timings(dir);
                RunPlots.writeFromSteps(
                        dir,
                        timings.steps(),
                        assembly.configuration().devices(),
                        timings.prepMillis());
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

    /**
     * {@code outcome} with the held-out score of the model the run saved in {@code dir}; without
     * it, the reason in {@code dir/evaluation-error.txt} and the log, when {@code evaluation}
     * fails.
     */
    static RunReport.Outcome evaluated(
            HeldOutEvaluation evaluation, RunReport.Outcome outcome, Path dir) throws IOException {
        try (PrintWriter progress = new PrintWriter(new LogLines(dir))) {
            return evaluation.evaluated(outcome, dir, progress);
        } catch (IOException | BadInputException | RuntimeException e) {
            LOG.error("the run in {} finished, but its held-out evaluation failed", dir, e);
            String why =
                    e.getMessage() == null
                            ? e.getClass().getSimpleName()
                            : e.getMessage().lines().findFirst().orElse("").strip();
            Files.writeString(
                    dir.resolve(EVALUATION_ERROR),
                    "the held-out evaluation failed: " + why + "\n",
                    StandardCharsets.UTF_8);
            return outcome;
        }
    }

    /** Lines written to it go to the log, each as it ends, naming the run. */
    private static final class LogLines extends Writer {
        private final Path run;
        private final StringBuilder line = new StringBuilder();

        LogLines(Path run) {
            this.run = run;
        }

        @Override
        public void write(char[] chars, int off, int len) {
            for (int i = off; i < off + len; i++) {
                if (chars[i] == '\n') {
                    LOG.info("the run in {}: {}", run, line);
                    line.setLength(0);
                } else {
                    line.append(chars[i]);
                }
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {
            if (line.length() > 0) {
                write(new char[] {'\n'}, 0, 1);
            }
        }
    }
}
