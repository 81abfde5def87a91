package io.minato.job;

import io.minato.job.dataflow.LoaderJob;
import io.minato.job.report.ReportAssembly;
import io.minato.job.report.RunReport;
import io.minato.job.report.RunSampler;
import io.minato.job.workload.TrainingSet;
import io.minato.loader.AccumulatorFiles;
import io.minato.loader.SampleRecipe;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.Savepoints;
import io.minato.trainer.TrainerSink;
import io.minato.trainer.TrainingProgress;
import io.minato.trainer.TrainingSettings;
import io.minato.trainer.serve.ServingDevice;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * One training run on Flink: the plan's trainer sink and loader job wired into an environment (this
 * process's MiniCluster, or the cluster {@code flink run} submits to), run to its end while a
 * progress line shows how far it is, and handed to its report. A failure that one line says all
 * about ends it with that line ({@link Failure#inRun}).
 */
final class TrainingRun {
    private static final Duration SAMPLE_PERIOD = Duration.ofMillis(250);

    /**
     * How long a run stopped with a savepoint waits for its REST endpoint to close, which it does
     * once the savepoint's result was fetched: the flink CLI polls at 2 s intervals at most.
     */
    static final Duration STOPPED_REST_WAIT = Duration.ofSeconds(15);

    /** How long the end of a run waits for its embedded cluster to close before clearing tmp/. */
    static final Duration CLUSTER_CLOSE_WAIT = Duration.ofSeconds(10);

    final RunPlan plan;
    final RunPlan.Options options;
    final TrainingSet set;
    final Path run;
    final AcceleratorFactory accelerator; // null: the devices serve training processes
    final ReportAssembly report;
    final HeldOutEvaluation evaluation; // null: no model to score, or nothing held out
    private final Path flinkTmp;
    private final StreamExecutionEnvironment env;
    private final Lifeline lifeline; // null: the run does not end with its launcher

    TrainingRun(RunPlan plan, TrainingSet set) throws Exception {
        this(plan, set, null);
    }

    /**
     * @param lifeline the launcher's life ({@code --exit-with-stdin}): the job is cancelled when it
     *     ends; null: none
     */
    TrainingRun(RunPlan plan, TrainingSet set, Lifeline lifeline) throws Exception {
        this.lifeline = lifeline;
        this.plan = plan;
        this.options = plan.options;
        this.set = set;
        this.run = plan.runDir;
        RunPlan.Options o = options;
        TrainingSettings optimizer =
                plan.optimizer == null
                        ? null
                        : plan.optimizer.withNetwork(set.network(o.width(), o.network()));
        ServingDevice.Factory server =
                plan.serving == null
                        ? null
                        : new ServingDevice.Factory(
                                plan.serving.bind(),
                                plan.serving.port(),
                                plan.serving.token(),
                                run.toAbsolutePath().toString(),
                                new SampleRecipe(set.workload()),
                                o.data().seed(),
                                set.workload().size(),
                                o.epochs(),
                                o.batch());
        accelerator =
                server != null
                        ? null
                        : optimizer != null
                                ? new DjlAccelerator.Factory(optimizer, plan.devices.devices())
                                : plan.simulated;
        report =
                new ReportAssembly(
                        configuration(optimizer), set.dir(), o.timeout(), set.remembers());
        evaluation = HeldOutEvaluation.of(set, accelerator, o.width());
        // `flink run -d`: no client waits for the job's accumulators, so the operators write them
        // into the run directory, and the job writes its own report (DetachedReport).
        // Application mode runs this in the JobManager, detached unless configured otherwise:
        // the job writes its report, and the JobManager must not be exited under it.
        if (!plan.embedded && FlinkSetup.applicationMode()) {
            Main.runsInsideJobManager();
        }
        boolean skip = o.data().skipBadSamples();
        TrainerSink.Builder sink = TrainerSink.builder();
        if (server != null) {
            sink.setServer(server);
        } else {
            sink.setAccelerator(accelerator);
        }
        sink.optQueueDepth(o.queueDepth())
                .optOutputDir(run.toAbsolutePath())
                .optTraceDir(run.toAbsolutePath())
                .optRecipe(new SampleRecipe(set.workload()))
                .optSkipBadSamples(skip)
                .optRestartsWithoutCheckpoint(o.restartAttempts());
        if (plan.detached) {
            sink.optOnRunEnd(
                    new DetachedReport(report, evaluation, o.report(), o.trace(), o.plots()));
        }
        LoaderJob.Builder job =
                LoaderJob.builder()
                        .setWorkload(set.workload())
                        .setTrainer(sink.build())
                        .optLoader(o.loader())
                        .optEpochs(o.epochs())
                        .optSeed(o.data().seed())
                        .optBatchSize(o.batch())
                        .optDevices(plan.devices.devices().size())
                        .optTimeout(o.timeout())
                        .optSkipBadSamples(skip)
                        .optTrainingSlots(plan.trainingSlots);
        LoaderJob loaderJob =
                (plan.scheduled
                                ? job.optScheduledWorkers(plan.fastWorkers, plan.slowWorkers)
                                : job.optWorkers(plan.fastWorkers, plan.slowWorkers))
                        .build();
        flinkTmp = tmpDir(run);
        // What a killed process of this run left (a resumed run starts in the same folder).
        FlinkSetup.clearTmp(flinkTmp);
        Files.createDirectories(flinkTmp);
        Configuration flink =
                FlinkSetup.jobConfiguration(run, o.checkpointInterval(), o.restartAttempts());
        if (o.restoreFrom() != null) {
            flink.setString(
                    "execution.state-recovery.path", o.restoreFrom().toAbsolutePath().toString());
        }
        env =
                FlinkSetup.environment(
                        flink,
                        plan.slots,
                        plan.networkBuffers,
                        o.webUi(),
                        plan.restPort,
                        plan.metricsPort,
                        flinkTmp);
        if (plan.detached) {
            Configuration parameters = new Configuration();
            parameters.setString(
                    AccumulatorFiles.DIR_PARAMETER,
                    run.resolve(DetachedReport.ACCUMULATORS).toAbsolutePath().toString());
            env.getConfig().setGlobalJobParameters(parameters);
        }
        loaderJob.build(env);
    }

    /** The embedded cluster's temporary folder in the run directory {@code run}. */
    static Path tmpDir(Path run) {
        return run.resolve("tmp");
    }

    /** What the report says of the run's set-up. */
    private RunReport.Configuration configuration(TrainingSettings optimizer) {
        RunPlan.Options o = options;
        return new RunReport.Configuration(
                o.data().workload().name(),
                o.loader().name(),
                plan.devices.devices().size(),
                o.batch(),
                o.data().patchEdge(),
                o.epochs(),
                o.data().seed(),
                new RunReport.DataSet(set.total(), set.train(), set.eval(), set.quarantine()),
                plan.cores,
                plan.workers(),
                optimizer,
                o.data().tail());
    }

    /** Runs the job to its end (or submits it detached) and reports on it; the exit status. */
    int execute(PrintWriter out, PrintWriter err) throws Exception {
        RunPlan.Options o = options;
        int devices = plan.devices.devices().size();
        err.printf(
                Locale.ROOT,
                "training: %s loader, %s, %d %s (%d held out, %d quarantined) x %d epochs, %s,"
                        + " batch %d x %d %s device(s), accelerator %s, %s workers, run dir %s%s%s%n",
                o.loader(),
                o.data().workload().name(),
                set.train(),
                set.unit(),
                set.held(),
                set.quarantine().size(),
                o.epochs(),
                o.data().workload().edgeLine(o.data().patchEdge()),
                o.batch(),
                devices,
                plan.devices.devices().get(0).isGpu() ? "gpu" : "cpu",
                o.accelerator(),
                plan.scheduled
                        ? "auto (" + plan.fastWorkers + " + " + plan.slowWorkers + ")"
                        : Integer.toString(plan.fastWorkers),
                run,
                o.webUi() ? ", web UI on http://localhost:" + plan.restPort : "",
                plan.metricsPort != null
                        ? ", metrics on http://localhost:" + plan.metricsPort + "/metrics"
                        : "");
        err.flush();
        String name = "minato-flink train (" + o.loader() + ")";
        if (plan.detached) {
            JobClient client = env.executeAsync(name);
            err.println(
                    "submitted job "
                            + client.getJobID()
                            + " detached: when it finishes it writes report.json, the trace and"
                            + " summary.txt into "
                            + run.toAbsolutePath()
                            + (o.report() != null ? " (and the report to " + o.report() + ")" : "")
                            + "; follow it in the web UI or with flink list");
            err.flush();
            return 0;
        }
        long cpu0 = RunSampler.cpuNanos();
        long start = System.currentTimeMillis();
        // The run's trainers register with it; read by the sampler and the progress line.
        TrainingProgress progress = TrainingProgress.of(run.toAbsolutePath());
        RunSampler sampler =
                plan.embedded
                        ? RunSampler.start(SAMPLE_PERIOD, () -> progress.totals().busyNanos())
                        : null;
        List<RunSampler.Sample> samples = null;
        JobExecutionResult result;
        OutputPaths.FullDiskWatch disk = OutputPaths.FullDiskWatch.start(run, 200);
        try {
            if (o.progressMillis() <= 0 && lifeline == null) {
                result = env.execute(name);
            } else {
                JobClient client = env.executeAsync(name);
                if (lifeline != null) {
                    lifeline.whileRunning(client::cancel, flinkTmp);
                }
                // Embedded, the trainers run in this JVM; on a cluster, their metrics come
                // through the JobManager's REST API.
                ClusterProgress cluster =
                        plan.embedded
                                ? null
                                : new ClusterProgress(
                                        FlinkSetup.clientConfiguration(),
                                        client.getJobID().toString());
                result =
                        o.progressMillis() <= 0
                                ? client.getJobExecutionResult().get()
                                : new ProgressLine(
                                                o.progressMillis(),
                                                (long) set.train() * o.epochs(),
                                                set.train(),
                                                devices,
                                                o.epochs(),
                                                o.restoreFrom() != null,
                                                err)
                                        .await(
                                                client,
                                                plan.embedded ? progress::totals : cluster::totals);
            }
            if (lifeline != null) {
                lifeline.jobEnded();
            }
        } catch (Exception e) {
            if (lifeline != null && lifeline.ended()) {
                throw Failure.launcherGone(run);
            }
            RuntimeException stopped =
                    Failure.of(e).inRun(run, plan.embedded, disk.sawNearlyFull());
            if (stopped != null) {
                throw stopped;
            }
            throw e;
        } finally {
            disk.close();
            samples = sampler == null ? null : sampler.stop();
            TrainingProgress.forget(run.toAbsolutePath());
            if (lifeline != null && lifeline.ended()) {
                Lifeline.stopChildren();
            }
            FlinkSetup.clearTmpOnceClosed(flinkTmp, CLUSTER_CLOSE_WAIT);
        }
        long processCpu = RunSampler.cpuNanos() - cpu0;
        String savepoint = Savepoints.stoppedWith(run);
        if (savepoint != null) {
            // flink stop: the job ended as finished, with samples left to train.
            err.println(
                    "stopped with a savepoint in "
                            + savepoint
                            + "; continue the run with --resume "
                            + run.toAbsolutePath());
            err.flush();
            if (plan.embedded && o.webUi()) {
                // The flink CLI that stopped the run asks this run's REST endpoint for the
                // savepoint once it completed; Flink's endpoint, shutting down with the job,
                // stays until that result was fetched. This process must not end before it.
                FlinkSetup.awaitClosed(plan.restPort, STOPPED_REST_WAIT);
            }
            return 0;
        }
        RunArgs.finished(run);
        RunReport.Measurements measured =
                new RunReport.Measurements(
                        start,
                        ManagementFactory.getRuntimeMXBean().getStartTime(),
                        processCpu / 1e9,
                        samples);
        new TrainingReport(this, out, err).write(result.getAllAccumulatorResults(), measured);
        return 0;
    }
}
