package io.minato.job.report;

import io.minato.stats.Distribution;
import io.minato.trainer.DeviceSummary;
import io.minato.trainer.TraceFiles;
import io.minato.trainer.TrainingSettings;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The report of one training run, in the fields and meanings of CONTRACT.md, built from what the
 * trainer subtasks left in the run directory (per-device summaries and delivery traces).
 *
 * <p>Beyond CONTRACT.md, {@code "gpu"} (after {@code "accelerator"}) sums up the devices' GPU
 * readings: {@code devices} that had readings, {@code utilization_mean_percent} the mean of their
 * mean utilisations (null when NVML reported none), {@code memory_peak_bytes} the largest peak and
 * {@code memory_total_bytes} the largest GPU's memory; null when no device had a reading (no GPU).
 * {@code "case_cache"} (after {@code "prep_ms"}) counts the preparations' lookups of results that
 * depend on a sample's files alone (kits19: the foreground components; images: the decoded pixels):
 * {@code hits}, {@code misses} (each miss computed the result), {@code bytes} (what the in-memory
 * stores of a TaskManager held at most, as its operators read them; null when not known); null when
 * the cache was off. {@code "tail"} is the bench's tail knob ({@code fraction}, {@code factor}),
 * null when off. {@code "workers"} (after {@code "cpu"}) says how many preparation workers ran and
 * whether the worker scheduler paced them ({@link Workers}), then the mean number it let prepare at
 * once ({@code active_mean}; over the workers, each counting its TaskManager's scheduler; null when
 * not paced) and how many prepared samples they sent with their bytes to a batcher or trainer in
 * another TaskManager ({@code sent_as_bytes}, {@code sent_in_pieces} of them as several records
 * each; null: not known). {@code "stall"} (before {@code "case_cache"}) says where the time went,
 * after DS-Analyzer: the devices' {@code wait_s} for batches split into {@code head_of_line_s} (a
 * loader held a ready batch back behind an unfinished one) and {@code behind_s} (the workers were
 * behind), and the workers' {@code fetch_s} (wall-clock seconds reading samples' files, waiting for
 * the disk or a core included; {@code fetch_cpu_s} the CPU part) against {@code transform_s} (the
 * rest of the preparation's CPU seconds); the last three null when not measured.
 */
public final class RunReport {

    /**
     * What the run was set up to do, known before it starts: the report's head ({@code workload} to
     * {@code dataset}), the cores and workers it had, its optimizer (null: a simulated accelerator,
     * which has none) and the bench's tail knob (null: off).
     */
    public record Configuration(
            String workload,
            String loader,
            int devices,
            int batch,
            int patch,
            int epochs,
            long seed,
            DataSet data,
            int cores,
            Workers workers,
            TrainingSettings optimizer,
            Tail tail)
            implements Serializable {

        /** Whether Minato's loader ran (the others have no deadline). */
        public boolean minato() {
            return loader.equals("minato");
        }
    }

    /**
     * The samples: {@code cases} in the data folder, {@code train} trained each epoch, {@code eval}
     * held out; {@code leftOut} the inputs left out as bad before the run started.
     */
    public record DataSet(int cases, int train, int eval, List<Quarantine> leftOut)
            implements Serializable {
        public DataSet {
            leftOut = List.copyOf(leftOut);
        }
    }

    /**
     * What the job said when it ended (its accumulators) and what the evaluation after it found.
     *
     * @param quarantined inputs the workers left out while the run prepared them
     * @param skippedSamples samples left out then (neither delivered nor dropped)
     * @param firstRequestMillis when the source handed out its first sample (null: it did not say)
     * @param timeoutMs the fast/slow deadline at the end (null: none)
     * @param caseCache the case cache's lookups (null: cache off)
     * @param activeWorkersMean the worker scheduler's mean active count (null: not paced)
     * @param crossed samples sent with their bytes to another TaskManager (null: not known)
     * @param fetch the workers' reads of samples' files (null: not measured)
     * @param taskManagers each TaskManager's part (null: the job did not say)
     * @param dice the held-out cases' Dice (null: none evaluated)
     * @param accuracy the held-out images' accuracy (null: none evaluated)
     */
    public record Outcome(
            List<Quarantine> quarantined,
            long skippedSamples,
            Long firstRequestMillis,
            Double timeoutMs,
            CacheCounts caseCache,
            Double activeWorkersMean,
            Crossed crossed,
            Fetch fetch,
            List<TaskManager> taskManagers,
            Dice dice,
            Accuracy accuracy)
            implements Serializable {
        public Outcome {
            quarantined = List.copyOf(quarantined);
            taskManagers = taskManagers == null ? null : List.copyOf(taskManagers);
        }

        /** This outcome with what the evaluation after training found. */
        public Outcome evaluated(Dice d, Accuracy a) {
            return new Outcome(
                    quarantined,
                    skippedSamples,
                    firstRequestMillis,
                    timeoutMs,
                    caseCache,
                    activeWorkersMean,
                    crossed,
                    fetch,
                    taskManagers,
                    d,
                    a);
        }
    }

    /**
     * Prepared samples that crossed to another TaskManager with their bytes, {@code asBytes} in all
     * and {@code inPieces} of them as several records each (a patch over {@code
     * SampleChunks.MAX_BYTES}).
     */
    public record Crossed(long asBytes, long inPieces) implements Serializable {}

    /**
     * What the process that waited for the job measured (none waits for a detached job).
     *
     * @param jobStartMillis when it started the job: the run's start when the source did not say
     * @param processStartMillis when its JVM started
     * @param processCpuSeconds its CPU time while the job ran
     * @param memory its memory readings over the run (null: not sampled, as under flink run)
     */
    public record Measurements(
            long jobStartMillis,
            long processStartMillis,
            double processCpuSeconds,
            List<RunSampler.Sample> memory) {}

    /** An input left out of the run (its path relative to the data folder) and why. */
    public record Quarantine(String file, String reason) implements Serializable {

        /** What {@code problem} says of a file under {@code dataDir}. */
        public static Quarantine of(Path dataDir, io.minato.data.BadInputException problem) {
            return of(dataDir, problem.file(), problem.problem());
        }

        /** {@code file} under {@code dataDir}, left out for {@code reason}. */
        public static Quarantine of(Path dataDir, Path file, String reason) {
            Path abs = file.toAbsolutePath().normalize();
            Path base = dataDir.toAbsolutePath().normalize();
            return new Quarantine(
                    abs.startsWith(base) ? base.relativize(abs).toString() : file.toString(),
                    reason);
        }
    }

    /**
     * The loaders' workers' time reading samples' files, summed over them: wall-clock seconds
     * (waiting on storage included) and the CPU seconds of it (what the preparation's CPU time
     * spent reading, not transforming).
     */
    public record Fetch(double seconds, double cpuSeconds) implements Serializable {}

    /** Top-1 accuracy of the trained classifier over {@code images} held-out images. */
    public record Accuracy(double top1, int images) implements Serializable {}

    /** Kidney and tumour Dice averaged over cases; mean is their average, as the MLPerf metric. */
    public record Dice(double mean, double kidney, double tumor, int cases)
            implements Serializable {}

    /** The bench's tail knob: a fraction of samples and how many times a sample's work they do. */
    public record Tail(double fraction, int factor) implements Serializable {}

    /**
     * The loader's preparation workers: {@code fast} and {@code slow} (Minato's two kinds; the
     * baselines' W + S threads count as fast), and whether the worker scheduler paced them ({@code
     * auto}).
     */
    public record Workers(int fast, int slow, boolean auto) implements Serializable {}

    /**
     * One TaskManager's part of the job: its preparation subtasks ({@code workers}) and trainers,
     * the CPU its process used while they ran, its process's peak resident memory (null: not known)
     * and its worker scheduler's mean active count (null: none paced there).
     */
    public record TaskManager(
            String id,
            int workers,
            int trainers,
            double cpuSeconds,
            Long peakRssBytes,
            Double activeMean)
            implements Serializable {}

    /**
     * Lookups of remembered per-sample results over the whole job, and the bytes a JVM's stores
     * held (null: not known).
     */
    public record CacheCounts(long hits, long misses, Long bytes) implements Serializable {}

    final Configuration config;
    final Outcome outcome;
    final Measurements measured; // null: no process waited for the job
    final String acceleratorKind;
    final double wallSeconds;
    final long steps;
    final long delivered;
    final long fast;
    final long slow;
    final long dropped;
    final double busyFraction;
    final double waitSeconds;
    final double headOfLineSeconds;
    final Distribution.Summary prepMs;
    final double boundSeconds;
    final double firstLoss;
    final double lastLoss;
    final int gpuDevices; // 0: no GPU readings, "gpu": null
    final double gpuUtilizationMean;
    final long gpuMemoryPeak;
    final long gpuMemoryTotal;
    final long firstEpochEnd; // epoch millis; 0: no epoch-0 sample was trained
    final long samplesAtFirstEpochEnd;
    final long startMillis; // the first request, or a resumed run's first step
    final RunSampler.Memory memory; // null: not measured
    final Checkpoints checkpoints; // null: the job wrote no account of them

    /**
     * The job's checkpoints as its trainers' coordinator counted them ({@code
     * TrainerSink.CHECKPOINTS_FILE}): completed, failed, timed out (failed once pending for the
     * whole checkpoint timeout), the longest any was pending, and the job's restores.
     */
    public record Checkpoints(
            long completed,
            long failed,
            long timedOut,
            double longestPendingSeconds,
            long restores) {
        /** The account in {@code runDir}; null when there is none. */
        static Checkpoints read(Path runDir) throws IOException {
            Path file = runDir.resolve(io.minato.trainer.TrainerSink.CHECKPOINTS_FILE);
            if (!Files.exists(file)) {
                return null;
            }
            if (!(io.minato.json.Json.parse(Files.readString(file, StandardCharsets.UTF_8))
                    instanceof java.util.Map<?, ?> m)) {
                throw new IOException(file + ": not a JSON object");
            }
            return new Checkpoints(
                    count(m, "completed", file),
                    count(m, "failed", file),
                    count(m, "timed_out", file),
                    number(m, "longest_pending_s", file).doubleValue(),
                    count(m, "restores", file));
        }

        private static long count(java.util.Map<?, ?> m, String key, Path file) throws IOException {
            return number(m, key, file).longValue();
        }

        private static Number number(java.util.Map<?, ?> m, String key, Path file)
                throws IOException {
            if (m.get(key) instanceof Number n) {
                return n;
            }
            throw new IOException(file + ": no number \"" + key + "\"");
        }
    }

    private RunReport(
            Configuration config,
            Outcome outcome,
            Measurements measured,
            List<DeviceSummary> devices,
            Distribution prep,
            Checkpoints checkpoints) {
        this.config = config;
        this.outcome = outcome;
        this.measured = measured;
        this.checkpoints = checkpoints;
        acceleratorKind = devices.isEmpty() ? "none" : devices.get(0).accelerator();
        long lastEnd = 0;
        long maxSteps = 0;
        long totalSteps = 0;
        long samples = 0;
        long f = 0;
        long s = 0;
        double busy = 0;
        double wait = 0;
        double held = 0;
        long epochEnd = 0;
        long atEpochEnd = 0;
        // A resumed run's devices started before this process asked for its first sample: the
        // run's time counts from their first step (the interruption included). Without a
        // recorded first request nor a waiting process it counts from the devices' first step.
        long start =
                outcome.firstRequestMillis() != null
                        ? outcome.firstRequestMillis()
                        : measured != null ? measured.jobStartMillis() : Long.MAX_VALUE;
        for (DeviceSummary d : devices) {
            if (d.firstStepStartMillis() > 0) {
                start = Math.min(start, d.firstStepStartMillis());
            }
            epochEnd = Math.max(epochEnd, d.firstEpochEndMillis());
            atEpochEnd += d.samplesAtFirstEpochEnd();
            lastEnd = Math.max(lastEnd, d.lastStepEndMillis());
            maxSteps = Math.max(maxSteps, d.steps());
            totalSteps += d.steps();
            samples += d.samples();
            f += d.fast();
            s += d.slow();
            busy += d.busySeconds();
            wait += d.waitSeconds();
            held += d.headOfLineSeconds();
        }
        startMillis = start;
        wallSeconds = lastEnd > 0 ? Math.max(0, (lastEnd - start) / 1000.0) : 0;
        firstEpochEnd = epochEnd;
        memory =
                measured == null || measured.memory() == null
                        ? null
                        : RunSampler.summarize(measured.memory(), epochEnd);
        samplesAtFirstEpochEnd = atEpochEnd;
        steps = maxSteps;
        delivered = samples;
        fast = f;
        slow = s;
        dropped =
                (long) config.data().train() * config.epochs() - samples - outcome.skippedSamples();
        busyFraction = wallSeconds > 0 ? busy / (config.devices() * wallSeconds) : 0;
        waitSeconds = wait;
        headOfLineSeconds = held;
        prepMs = prep.summary();
        double meanStep = totalSteps > 0 ? busy / totalSteps : 0;
        boundSeconds = Math.max(prepMs.sum() / 1000 / config.cores(), steps * meanStep);
        firstLoss = devices.isEmpty() ? Double.NaN : devices.get(0).firstLoss();
        lastLoss = devices.isEmpty() ? Double.NaN : devices.get(0).lastLoss();

        int gpus = 0;
        int utilized = 0;
        double utilization = 0;
        long peak = 0;
        long total = 0;
        for (DeviceSummary d : devices) {
            GpuStats g = d.gpu();
            if (g == null) {
                continue;
            }
            gpus++;
            if (!Double.isNaN(g.utilizationMeanPercent())) {
                utilized++;
                utilization += g.utilizationMeanPercent();
            }
            peak = Math.max(peak, g.memoryPeakBytes());
            total = Math.max(total, g.memoryTotalBytes());
        }
        gpuDevices = gpus;
        gpuUtilizationMean = utilized > 0 ? utilization / utilized : Double.NaN;
        gpuMemoryPeak = peak;
        gpuMemoryTotal = total;
    }

    /** Reads the run directory the trainer sink wrote, for a run a process waited for. */
    public static RunReport build(
            Configuration config, Outcome outcome, Measurements measured, Path runDir)
            throws IOException {
        return read(config, outcome, java.util.Objects.requireNonNull(measured), runDir);
    }

    /** Reads the run directory of a detached run: no process measured it. */
    public static RunReport build(Configuration config, Outcome outcome, Path runDir)
            throws IOException {
        return read(config, outcome, null, runDir);
    }

    private static RunReport read(
            Configuration config, Outcome outcome, Measurements measured, Path runDir)
            throws IOException {
        List<DeviceSummary> devices = new ArrayList<>();
        for (int d = 0; d < config.devices(); d++) {
            Path file = DeviceSummary.file(runDir, d);
            if (!Files.exists(file)) {
                throw new IOException(
                        file + ": no summary from device " + d + "; did its trainer finish?");
            }
            devices.add(DeviceSummary.read(file));
        }
        Distribution prep = new Distribution();
        for (double ms : TraceFiles.prepMillis(runDir)) {
            prep.add(ms);
        }
        return new RunReport(config, outcome, measured, devices, prep, Checkpoints.read(runDir));
    }

    /** Every input left out of the run: before it started, then while it ran. */
    public List<Quarantine> quarantine() {
        List<Quarantine> all = new ArrayList<>(config.data().leftOut());
        all.addAll(outcome.quarantined());
        return all;
    }

    public long delivered() {
        return delivered;
    }

    public long dropped() {
        return dropped;
    }

    /** The devices' wait while a loader held a ready batch back behind an unfinished one. */
    public double headOfLineSeconds() {
        return headOfLineSeconds;
    }

    /** The rest of the devices' wait: the workers were behind. */
    public double behindSeconds() {
        return Math.max(0, waitSeconds - headOfLineSeconds);
    }

    /** The preparation's CPU time outside reads of samples' files; NaN when reads are unknown. */
    public double transformSeconds() {
        Fetch fetch = outcome.fetch();
        return fetch == null ? Double.NaN : Math.max(0, prepMs.sum() / 1000 - fetch.cpuSeconds());
    }

    public String toJson() {
        return ReportJson.of(this);
    }

    public void write(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, toJson(), StandardCharsets.UTF_8);
    }

    /** The one-line summary the train command prints. */
    public String summaryLine() {
        double rate = wallSeconds > 0 ? delivered / wallSeconds : 0;
        Double timeoutMs = outcome.timeoutMs();
        Dice dice = outcome.dice();
        Accuracy accuracy = outcome.accuracy();
        return String.format(
                        Locale.ROOT,
                        "%s: %.1f s, %d steps, %d samples (%.1f/s; %d fast, %d slow, %d dropped, %d quarantined),"
                                + " accelerator busy %.0f %%, bound %.1f s (wall/bound %.2f), timeout %s",
                        config.loader(),
                        wallSeconds,
                        steps,
                        delivered,
                        rate,
                        fast,
                        slow,
                        dropped,
                        quarantine().size(),
                        100 * busyFraction,
                        boundSeconds,
                        boundSeconds > 0 ? wallSeconds / boundSeconds : 0,
                        timeoutMs != null
                                ? String.format(Locale.ROOT, "%.1f ms", timeoutMs)
                                // Minato's auto timeout learns a deadline from its first samples.
                                : config.minato() ? "none: no deadline yet" : "none")
                + String.format(
                        Locale.ROOT,
                        ", waited %.1f s (head-of-line %.1f s, behind %.1f s)",
                        waitSeconds,
                        headOfLineSeconds,
                        behindSeconds())
                + (dice == null
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                ", Dice %.3f (kidney %.3f, tumour %.3f; %d held-out cases)",
                                dice.mean(),
                                dice.kidney(),
                                dice.tumor(),
                                dice.cases()))
                + (accuracy == null
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                ", top-1 accuracy %.3f (%d held-out images)",
                                accuracy.top1(),
                                accuracy.images()));
    }
}
