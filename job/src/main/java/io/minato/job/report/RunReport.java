package io.minato.job.report;

import io.minato.job.DataOptions;
import io.minato.job.Evaluation;
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
 * whether the worker scheduler paced them ({@link Workers}). {@code "stall"} (before {@code
 * "case_cache"}) says where the time went, after DS-Analyzer: the devices' {@code wait_s} for
 * batches split into {@code head_of_line_s} (a loader held a ready batch back behind an unfinished
 * one) and {@code behind_s} (the workers were behind), and the workers' {@code fetch_s} (wall-clock
 * seconds reading samples' files, waiting for the disk or a core included; {@code fetch_cpu_s} the
 * CPU part) against {@code transform_s} (the rest of the preparation's CPU seconds); the last three
 * null when not measured.
 */
public final class RunReport {

    /** What the driver knows that the run directory does not. */
    public record Inputs(
            String workload,
            String loader,
            int devices,
            int batch,
            int patch,
            int epochs,
            long seed,
            int cases,
            int trainCases,
            int evalCases,
            List<Quarantine> quarantine,
            long firstRequestMillis,
            long processStartMillis,
            int cores,
            double processCpuSeconds,
            Double timeoutMs,
            Evaluation.Dice dice,
            Accuracy accuracy,
            TrainingSettings optimizer,
            CacheCounts caseCache,
            DataOptions.Tail tail,
            List<RunSampler.Sample> memory,
            Workers workers,
            Fetch fetch,
            List<TaskManager> taskManagers,
            long skippedSamples)
            implements Serializable {

        /**
         * @param quarantine every input left out, before the run or during it
         * @param skippedSamples samples left out during the run because their input was quarantined
         *     then (neither delivered nor dropped)
         */
        public Inputs {
            quarantine = List.copyOf(quarantine);
            taskManagers = taskManagers == null ? null : List.copyOf(taskManagers);
        }

        /** Inputs left out as bad. */
        public int quarantined() {
            return quarantine.size();
        }
    }

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

    /**
     * The loader's preparation workers: {@code fast} and {@code slow} (Minato's two kinds; the
     * baselines' W + S threads count as fast), whether the worker scheduler paced them ({@code
     * auto}) and then the mean number it let prepare at once ({@code activeMean}, else null; over
     * the workers, each counting its TaskManager's scheduler), and how many prepared samples they
     * sent with their bytes to a batcher or trainer in another TaskManager (null: not known).
     */
    public record Workers(int fast, int slow, boolean auto, Double activeMean, Long sentAsBytes)
            implements Serializable {

        /** Workers whose samples' routes are not known. */
        public Workers(int fast, int slow, boolean auto, Double activeMean) {
            this(fast, slow, auto, activeMean, null);
        }
    }

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
     * held (null: not known); null in the inputs: cache off.
     */
    public record CacheCounts(long hits, long misses, Long bytes) implements Serializable {}

    private final Inputs in;
    private final String acceleratorKind;
    private final double wallSeconds;
    private final long steps;
    private final long delivered;
    private final long fast;
    private final long slow;
    private final long dropped;
    private final double busyFraction;
    private final double waitSeconds;
    private final double headOfLineSeconds;
    private final Distribution.Summary prepMs;
    private final double boundSeconds;
    private final double firstLoss;
    private final double lastLoss;
    private final int gpuDevices; // 0: no GPU readings, "gpu": null
    private final double gpuUtilizationMean;
    private final long gpuMemoryPeak;
    private final long gpuMemoryTotal;
    private final long firstEpochEnd; // epoch millis; 0: no epoch-0 sample was trained
    private final long samplesAtFirstEpochEnd;
    private final long startMillis; // the first request, or a resumed run's first step
    private final RunSampler.Memory memory; // null: not measured

    private RunReport(Inputs in, List<DeviceSummary> devices, Distribution prep) {
        this.in = in;
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
        // run's time counts from their first step (the interruption included).
        long start = in.firstRequestMillis();
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
        memory = in.memory() == null ? null : RunSampler.summarize(in.memory(), epochEnd);
        samplesAtFirstEpochEnd = atEpochEnd;
        steps = maxSteps;
        delivered = samples;
        fast = f;
        slow = s;
        dropped = (long) in.trainCases() * in.epochs() - samples - in.skippedSamples();
        busyFraction = wallSeconds > 0 ? busy / (in.devices() * wallSeconds) : 0;
        waitSeconds = wait;
        headOfLineSeconds = held;
        prepMs = prep.summary();
        double meanStep = totalSteps > 0 ? busy / totalSteps : 0;
        boundSeconds = Math.max(prepMs.sum() / 1000 / in.cores(), steps * meanStep);
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

    /** Reads the run directory the trainer sink wrote. */
    public static RunReport build(Inputs in, Path runDir) throws IOException {
        List<DeviceSummary> devices = new ArrayList<>();
        for (int d = 0; d < in.devices(); d++) {
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
        return new RunReport(in, devices, prep);
    }

    /**
     * The first epoch apart from the later ones: the first meets every case cold (its files mapped,
     * its foreground components scanned), the later ones show the steady state. {@code
     * first_epoch.wall_s} runs from the first request to the end of the last step that held an
     * epoch-0 sample, {@code samples} counts every sample trained by then (a loader that runs ahead
     * trains some of epoch 1 before the last of epoch 0); {@code later_epochs} is the rest of the
     * run. Null when no epoch-0 sample was trained; {@code later_epochs} null with one epoch.
     */
    private void appendEpochs(StringBuilder b) {
        b.append("  \"first_epoch\": ");
        if (firstEpochEnd == 0 || wallSeconds == 0) {
            b.append("null,\n  \"later_epochs\": null,\n");
            return;
        }
        double first = Math.min(wallSeconds, Math.max(0, firstEpochEnd - startMillis) / 1000.0);
        b.append("{\"wall_s\": ").append(DeviceSummary.Json.number(first));
        b.append(", \"samples\": ").append(samplesAtFirstEpochEnd).append("},\n");
        b.append("  \"later_epochs\": ");
        long later = delivered - samplesAtFirstEpochEnd;
        double laterSeconds = wallSeconds - first;
        if (in.epochs() < 2 || later <= 0) {
            b.append("null,\n");
            return;
        }
        b.append("{\"wall_s\": ").append(DeviceSummary.Json.number(laterSeconds));
        b.append(", \"samples\": ").append(later);
        b.append(", \"samples_per_s\": ")
                .append(laterSeconds > 0 ? DeviceSummary.Json.number(later / laterSeconds) : "null")
                .append("},\n");
    }

    /**
     * Resident memory of the training process (the embedded run; null under {@code flink run}, or
     * without a reading after the first epoch): peaks over the first epoch and over the run, in all
     * and anonymous (heap, native buffers, model) apart from the mapped data set's pages.
     */
    /**
     * From this process's start to its first sample request: what a user waits for after the
     * command (JVM, checks, Flink's start-up, the job's deployment); null when either is unknown.
     */
    private String startSeconds() {
        long jvm = in.processStartMillis();
        long first = in.firstRequestMillis();
        if (jvm <= 0 || first < jvm) {
            return "null";
        }
        return DeviceSummary.Json.number((first - jvm) / 1000.0);
    }

    /**
     * Each TaskManager's part, with its CPU per sample trained in the whole job (a trainer's
     * TaskManager receives every sample; a preparer's prepares its share); null when the job did
     * not say.
     */
    private void appendTaskManagers(StringBuilder b) {
        b.append("  \"task_managers\": ");
        if (in.taskManagers() == null) {
            b.append("null,\n");
            return;
        }
        b.append('[');
        String sep = "";
        for (TaskManager tm : in.taskManagers()) {
            b.append(sep).append("{\"id\": ").append(DeviceSummary.Json.quote(tm.id()));
            b.append(", \"workers\": ").append(tm.workers());
            b.append(", \"trainers\": ").append(tm.trainers());
            b.append(", \"process_cpu_s\": ")
                    .append(DeviceSummary.Json.number(Math.round(tm.cpuSeconds() * 100) / 100.0));
            b.append(", \"cpu_ms_per_sample\": ")
                    .append(
                            delivered > 0
                                    ? DeviceSummary.Json.number(
                                            Math.round(tm.cpuSeconds() * 1e4 / delivered) / 10.0)
                                    : "null");
            b.append(", \"peak_rss_mb\": ")
                    .append(tm.peakRssBytes() == null ? "null" : mb(tm.peakRssBytes()));
            b.append(", \"active_mean\": ")
                    .append(
                            tm.activeMean() == null
                                    ? "null"
                                    : DeviceSummary.Json.number(
                                            Math.round(tm.activeMean() * 100) / 100.0))
                    .append('}');
            sep = ", ";
        }
        b.append("],\n");
    }

    private void appendMemory(StringBuilder b) {
        b.append("  \"memory\": ");
        if (memory == null) {
            b.append("null,\n");
            return;
        }
        b.append("{\"peak_rss_mb\": ").append(mb(memory.peakRss()));
        b.append(", \"peak_anon_mb\": ").append(mb(memory.peakAnon()));
        b.append(", \"first_epoch_peak_anon_mb\": ").append(mb(memory.firstEpochPeakAnon()));
        b.append(", \"later_halves_peak_anon_mb\": [")
                .append(mb(memory.laterFirstHalfPeakAnon()))
                .append(", ")
                .append(mb(memory.laterSecondHalfPeakAnon()))
                .append("]");
        b.append(", \"anon_growth_over_later_epochs\": ")
                .append(
                        DeviceSummary.Json.number(
                                Math.round(memory.anonGrowthOverLaterEpochs() * 1e4) / 1e4))
                .append("},\n");
    }

    private static String mb(long bytes) {
        return DeviceSummary.Json.number(Math.round(bytes / 1048576.0 * 10) / 10.0);
    }

    public long delivered() {
        return delivered;
    }

    /** What the report was built from. */
    public Inputs inputs() {
        return in;
    }

    public long dropped() {
        return dropped;
    }

    public String toJson() {
        StringBuilder b = new StringBuilder(1024);
        b.append("{\n");
        b.append("  \"workload\": ").append(DeviceSummary.Json.quote(in.workload())).append(",\n");
        b.append("  \"loader\": ").append(DeviceSummary.Json.quote(in.loader())).append(",\n");
        b.append("  \"devices\": ").append(in.devices()).append(", \"batch\": ").append(in.batch());
        b.append(", \"patch\": ").append(in.patch()).append(", \"epochs\": ").append(in.epochs());
        b.append(", \"seed\": ").append(in.seed()).append(",\n");
        b.append("  \"dataset\": {\"cases\": ")
                .append(in.cases())
                .append(", \"train\": ")
                .append(in.trainCases());
        b.append(", \"eval\": ").append(in.evalCases()).append("},\n");
        b.append("  \"wall_s\": ").append(DeviceSummary.Json.number(wallSeconds)).append(",\n");
        b.append("  \"start_s\": ").append(startSeconds()).append(",\n");
        b.append("  \"steps\": ").append(steps).append(",\n");
        b.append("  \"samples\": {\"delivered\": ")
                .append(delivered)
                .append(", \"fast\": ")
                .append(fast);
        b.append(", \"slow\": ").append(slow).append(", \"dropped\": ").append(dropped);
        b.append(", \"quarantined\": ").append(in.quarantined()).append("},\n");
        b.append("  \"accelerator\": {\"kind\": ")
                .append(DeviceSummary.Json.quote(acceleratorKind));
        b.append(", \"busy_fraction\": ").append(DeviceSummary.Json.number(busyFraction));
        b.append(", \"wait_s\": ").append(DeviceSummary.Json.number(waitSeconds)).append("},\n");
        b.append("  \"gpu\": ");
        b.append(
                gpuDevices == 0
                        ? "null"
                        : "{\"devices\": "
                                + gpuDevices
                                + ", \"utilization_mean_percent\": "
                                + DeviceSummary.Json.number(gpuUtilizationMean)
                                + ", \"memory_peak_bytes\": "
                                + gpuMemoryPeak
                                + ", \"memory_total_bytes\": "
                                + gpuMemoryTotal
                                + "}");
        b.append(",\n");
        b.append("  \"prep_ms\": {\"p50\": ").append(DeviceSummary.Json.number(prepMs.p50()));
        b.append(", \"p90\": ").append(DeviceSummary.Json.number(prepMs.p90()));
        b.append(", \"p99\": ").append(DeviceSummary.Json.number(prepMs.p99()));
        b.append(", \"max\": ").append(DeviceSummary.Json.number(prepMs.max()));
        b.append(", \"sum\": ").append(DeviceSummary.Json.number(prepMs.sum())).append("},\n");
        DataOptions.Tail tail = in.tail();
        b.append("  \"tail\": ")
                .append(
                        tail == null
                                ? "null"
                                : "{\"fraction\": "
                                        + DeviceSummary.Json.number(tail.fraction())
                                        + ", \"factor\": "
                                        + tail.factor()
                                        + "}")
                .append(",\n");
        Fetch fetch = in.fetch();
        b.append("  \"stall\": {\"wait_s\": ")
                .append(DeviceSummary.Json.number(waitSeconds))
                .append(", \"head_of_line_s\": ")
                .append(DeviceSummary.Json.number(headOfLineSeconds))
                .append(", \"behind_s\": ")
                .append(DeviceSummary.Json.number(behindSeconds()))
                .append(", \"fetch_s\": ")
                .append(fetch == null ? "null" : DeviceSummary.Json.number(fetch.seconds()))
                .append(", \"fetch_cpu_s\": ")
                .append(fetch == null ? "null" : DeviceSummary.Json.number(fetch.cpuSeconds()))
                .append(", \"transform_s\": ")
                .append(fetch == null ? "null" : DeviceSummary.Json.number(transformSeconds()))
                .append("},\n");
        CacheCounts cc = in.caseCache();
        b.append("  \"case_cache\": ")
                .append(
                        cc == null
                                ? "null"
                                : "{\"hits\": "
                                        + cc.hits()
                                        + ", \"misses\": "
                                        + cc.misses()
                                        + ", \"bytes\": "
                                        + (cc.bytes() == null ? "null" : cc.bytes())
                                        + "}")
                .append(",\n");
        b.append("  \"cpu\": {\"cores\": ").append(in.cores());
        b.append(", \"process_cpu_s\": ")
                .append(DeviceSummary.Json.number(in.processCpuSeconds()))
                .append("},\n");
        Workers w = in.workers();
        b.append("  \"workers\": ");
        if (w == null) {
            b.append("null,\n");
        } else {
            b.append("{\"fast\": ").append(w.fast()).append(", \"slow\": ").append(w.slow());
            b.append(", \"auto\": ").append(w.auto()).append(", \"active_mean\": ");
            b.append(
                            w.activeMean() == null
                                    ? "null"
                                    : DeviceSummary.Json.number(
                                            Math.round(w.activeMean() * 100) / 100.0))
                    .append(", \"sent_as_bytes\": ")
                    .append(w.sentAsBytes() == null ? "null" : w.sentAsBytes())
                    .append("},\n");
        }
        appendTaskManagers(b);
        appendMemory(b);
        b.append("  \"bound_s\": ").append(DeviceSummary.Json.number(boundSeconds)).append(",\n");
        appendEpochs(b);
        b.append("  \"timeout_ms\": ")
                .append(in.timeoutMs() == null ? "null" : DeviceSummary.Json.number(in.timeoutMs()))
                .append(",\n");
        b.append("  \"loss\": ");
        b.append(
                Double.isNaN(firstLoss)
                        ? "null"
                        : "{\"first\": "
                                + DeviceSummary.Json.number(firstLoss)
                                + ", \"last\": "
                                + DeviceSummary.Json.number(lastLoss)
                                + "}");
        b.append(",\n");
        TrainingSettings o = in.optimizer();
        b.append("  \"optimizer\": ");
        b.append(
                o == null
                        ? "null"
                        : "{\"name\": \"sgd\", \"learning_rate\": "
                                + decimal(o.learningRate())
                                + ", \"momentum\": "
                                + decimal(o.momentum())
                                + ", \"weight_decay\": "
                                + decimal(o.weightDecay())
                                + ", \"nesterov\": "
                                + o.nesterov()
                                + ", \"warmup_steps\": "
                                + o.warmupSteps()
                                + ", \"warmup_start_lr\": "
                                + decimal(o.warmupStartLearningRate())
                                + ", \"decay_steps\": "
                                + o.decaySteps()
                                + ", \"decay_factor\": "
                                + decimal(o.decayFactor())
                                + ", \"schedule\": "
                                + DeviceSummary.Json.quote(schedule(o))
                                + ", \"width\": "
                                + DeviceSummary.Json.number(o.width())
                                + "}");
        b.append(",\n");
        Evaluation.Dice d = in.dice();
        b.append("  \"dice\": ");
        b.append(
                d == null
                        ? "null"
                        : "{\"mean\": "
                                + DeviceSummary.Json.number(d.mean())
                                + ", \"kidney\": "
                                + DeviceSummary.Json.number(d.kidney())
                                + ", \"tumor\": "
                                + DeviceSummary.Json.number(d.tumor())
                                + "}");
        b.append(",\n");
        Accuracy a = in.accuracy();
        b.append("  \"accuracy\": ");
        b.append(
                a == null
                        ? "null"
                        : "{\"top1\": "
                                + DeviceSummary.Json.number(a.top1())
                                + ", \"images\": "
                                + a.images()
                                + "}");
        b.append(",\n");
        b.append("  \"quarantine\": [");
        for (int i = 0; i < in.quarantine().size(); i++) {
            Quarantine q = in.quarantine().get(i);
            b.append(i == 0 ? "\n    " : ",\n    ")
                    .append("{\"file\": ")
                    .append(DeviceSummary.Json.quote(q.file()))
                    .append(", \"reason\": ")
                    .append(DeviceSummary.Json.quote(q.reason()))
                    .append("}");
        }
        b.append(in.quarantine().isEmpty() ? "]\n" : "\n  ]\n");
        b.append("}\n");
        return b.toString();
    }

    /** The learning-rate schedule in words, for people reading the report. */
    static String schedule(TrainingSettings o) {
        StringBuilder b = new StringBuilder();
        if (o.warmupSteps() > 0) {
            b.append("linear warm-up from ")
                    .append(o.warmupStartLearningRate())
                    .append(" to ")
                    .append(o.learningRate())
                    .append(" over ")
                    .append(o.warmupSteps())
                    .append(" steps, then ");
        }
        if (o.decaySteps().isEmpty() || o.decayFactor() == 1f) {
            b.append("constant ").append(o.learningRate());
        } else {
            b.append(o.learningRate())
                    .append(" times ")
                    .append(o.decayFactor())
                    .append(" after each of steps ")
                    .append(o.decaySteps());
        }
        return b.toString();
    }

    /** A float setting as the user typed it: 0.1, not 0.10000000149011612. */
    private static String decimal(float v) {
        return DeviceSummary.Json.number(Double.parseDouble(Float.toString(v)));
    }

    public void write(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, toJson(), StandardCharsets.UTF_8);
    }

    /** The one-line summary the train command prints. */
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
        Fetch fetch = in.fetch();
        return fetch == null ? Double.NaN : Math.max(0, prepMs.sum() / 1000 - fetch.cpuSeconds());
    }

    public String summaryLine() {
        double rate = wallSeconds > 0 ? delivered / wallSeconds : 0;
        return String.format(
                        Locale.ROOT,
                        "%s: %.1f s, %d steps, %d samples (%.1f/s; %d fast, %d slow, %d dropped, %d quarantined),"
                                + " accelerator busy %.0f %%, bound %.1f s (wall/bound %.2f), timeout %s",
                        in.loader(),
                        wallSeconds,
                        steps,
                        delivered,
                        rate,
                        fast,
                        slow,
                        dropped,
                        in.quarantined(),
                        100 * busyFraction,
                        boundSeconds,
                        boundSeconds > 0 ? wallSeconds / boundSeconds : 0,
                        in.timeoutMs() != null
                                ? String.format(Locale.ROOT, "%.1f ms", in.timeoutMs())
                                // Minato's auto timeout learns a deadline from its first samples.
                                : in.loader().equals("minato") ? "none: no deadline yet" : "none")
                + String.format(
                        Locale.ROOT,
                        ", waited %.1f s (head-of-line %.1f s, behind %.1f s)",
                        waitSeconds,
                        headOfLineSeconds,
                        behindSeconds())
                + (in.dice() == null
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                ", Dice %.3f (kidney %.3f, tumour %.3f; %d held-out cases)",
                                in.dice().mean(),
                                in.dice().kidney(),
                                in.dice().tumor(),
                                in.dice().cases()))
                + (in.accuracy() == null
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                ", top-1 accuracy %.3f (%d held-out images)",
                                in.accuracy().top1(),
                                in.accuracy().images()));
    }
}
