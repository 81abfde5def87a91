package io.minato.job;

import io.minato.loader.AugmentOperator;
import io.minato.trainer.TrainingProgress;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.core.execution.JobClient;

/** The progress line a run prints while it waits for its job ({@code --progress-interval}). */
final class ProgressLine {
    private final long intervalMillis;
    private final long all;
    private final int cases;
    private final int devices;
    private final int epochs;
    private final boolean resumed;
    private final PrintWriter err;

    /**
     * @param all samples of the run
     * @param cases samples an epoch
     * @param resumed whether the run goes on from a checkpoint (its devices come back with the
     *     samples trained before)
     */
    ProgressLine(
            long intervalMillis,
            long all,
            int cases,
            int devices,
            int epochs,
            boolean resumed,
            PrintWriter err) {
        this.intervalMillis = intervalMillis;
        this.all = all;
        this.cases = cases;
        this.devices = devices;
        this.epochs = epochs;
        this.resumed = resumed;
        this.err = err;
    }

    /**
     * Waits for the job, printing what the trainers have done every {@code --progress-interval}:
     * epoch, samples of the run, samples per second and accelerator busy time over the last
     * interval, slow samples so far, and when the run should end at that pace.
     */
    JobExecutionResult await(JobClient job, Supplier<TrainingProgress.Totals> progress)
            throws Exception {
        boolean terminal = System.console() != null;
        long interval = terminal ? Math.min(intervalMillis, 1000) : intervalMillis;
        CompletableFuture<JobExecutionResult> done = job.getJobExecutionResult();
        long lastNanos = System.nanoTime();
        TrainingProgress.Totals last = progress.get();
        boolean drawn = false;
        try {
            while (true) {
                try {
                    return done.get(interval, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    long now = System.nanoTime();
                    TrainingProgress.Totals t = progress.get();
                    if (t.samples() == 0) {
                        continue; // starting up
                    }
                    if (last.samples() == 0 && resumed) {
                        // A resumed run's devices come back with the samples trained before:
                        // the pace counts from here.
                        last = t;
                        lastNanos = now;
                        continue;
                    }
                    double seconds = (now - lastNanos) / 1e9;
                    double rate = (t.samples() - last.samples()) / seconds;
                    long total = all - skippedSoFar(job);
                    // A step counts as busy when it ends, all of it: one that began in the
                    // last interval would push this one's share past 100 %.
                    double busy =
                            Math.min(
                                    1.0,
                                    (t.busyNanos() - last.busyNanos()) / 1e9 / seconds / devices);
                    last = t;
                    lastNanos = now;
                    String line =
                            String.format(
                                    Locale.ROOT,
                                    "progress: epoch %d/%d, %d/%d samples (%d %%), %.1f/s,"
                                            + " accelerator busy %.0f %%, %d slow,%s ETA %s",
                                    Math.min(epochs, t.samples() / cases + 1),
                                    epochs,
                                    t.samples(),
                                    total,
                                    100 * t.samples() / total,
                                    rate,
                                    100 * busy,
                                    t.slow(),
                                    t.scheduledWorkers() == 0
                                            ? ""
                                            : " "
                                                    + t.activeWorkers()
                                                    + " of "
                                                    + t.scheduledWorkers()
                                                    + " workers active,",
                                    rate > 0
                                            ? Math.round((total - t.samples()) / rate) + " s"
                                            : "-");
                    err.print(terminal ? "\r" + line + "   " : line + "\n");
                    err.flush();
                    drawn = true;
                }
            }
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        } finally {
            if (drawn && terminal) {
                err.println();
            }
        }
    }

    /**
     * Samples left out so far because their source was quarantined, which the progress line's total
     * does not count; 0 while the job cannot say (restarting, ending).
     */
    private static long skippedSoFar(JobClient job) {
        try {
            return job.getAccumulators()
                                    .get(1, TimeUnit.SECONDS)
                                    .get(AugmentOperator.SAMPLES_SKIPPED)
                            instanceof Long n
                    ? n
                    : 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            return 0;
        }
    }
}
