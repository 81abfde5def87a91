package io.minato.job.report;

import io.minato.trainer.DeviceSummary;
import io.minato.trainer.TrainingSettings;
import java.util.List;

/** A {@link RunReport} in its JSON form: the fields of CONTRACT.md, then the report's own. */
final class ReportJson {
    private final RunReport r;
    private final RunReport.Configuration c;
    private final RunReport.Outcome o;
    private final StringBuilder b = new StringBuilder(1024);

    private ReportJson(RunReport r) {
        this.r = r;
        this.c = r.config;
        this.o = r.outcome;
    }

    static String of(RunReport r) {
        return new ReportJson(r).json();
    }

    private String json() {
        b.append("{\n");
        b.append("  \"workload\": ").append(DeviceSummary.Json.quote(c.workload())).append(",\n");
        b.append("  \"loader\": ").append(DeviceSummary.Json.quote(c.loader())).append(",\n");
        b.append("  \"devices\": ").append(c.devices()).append(", \"batch\": ").append(c.batch());
        b.append(", \"patch\": ").append(c.patch()).append(", \"epochs\": ").append(c.epochs());
        b.append(", \"seed\": ").append(c.seed()).append(",\n");
        b.append("  \"dataset\": {\"cases\": ")
                .append(c.data().cases())
                .append(", \"train\": ")
                .append(c.data().train());
        b.append(", \"eval\": ").append(c.data().eval()).append("},\n");
        b.append("  \"wall_s\": ").append(DeviceSummary.Json.number(r.wallSeconds)).append(",\n");
        b.append("  \"start_s\": ").append(startSeconds()).append(",\n");
        b.append("  \"steps\": ").append(r.steps).append(",\n");
        b.append("  \"samples\": {\"delivered\": ")
                .append(r.delivered)
                .append(", \"fast\": ")
                .append(r.fast);
        b.append(", \"slow\": ").append(r.slow).append(", \"dropped\": ").append(r.dropped);
        b.append(", \"quarantined\": ").append(r.quarantine().size()).append("},\n");
        b.append("  \"accelerator\": {\"kind\": ")
                .append(DeviceSummary.Json.quote(r.acceleratorKind));
        b.append(", \"busy_fraction\": ").append(DeviceSummary.Json.number(r.busyFraction));
        b.append(", \"wait_s\": ").append(DeviceSummary.Json.number(r.waitSeconds)).append("},\n");
        b.append("  \"gpu\": ");
        b.append(
                r.gpuDevices == 0
                        ? "null"
                        : "{\"devices\": "
                                + r.gpuDevices
                                + ", \"utilization_mean_percent\": "
                                + DeviceSummary.Json.number(r.gpuUtilizationMean)
                                + ", \"memory_peak_bytes\": "
                                + r.gpuMemoryPeak
                                + ", \"memory_total_bytes\": "
                                + r.gpuMemoryTotal
                                + "}");
        b.append(",\n");
        b.append("  \"prep_ms\": {\"p50\": ").append(DeviceSummary.Json.number(r.prepMs.p50()));
        b.append(", \"p90\": ").append(DeviceSummary.Json.number(r.prepMs.p90()));
        b.append(", \"p99\": ").append(DeviceSummary.Json.number(r.prepMs.p99()));
        b.append(", \"max\": ").append(DeviceSummary.Json.number(r.prepMs.max()));
        b.append(", \"sum\": ").append(DeviceSummary.Json.number(r.prepMs.sum())).append("},\n");
        RunReport.Tail tail = c.tail();
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
        RunReport.Fetch fetch = o.fetch();
        b.append("  \"stall\": {\"wait_s\": ")
                .append(DeviceSummary.Json.number(r.waitSeconds))
                .append(", \"head_of_line_s\": ")
                .append(DeviceSummary.Json.number(r.headOfLineSeconds))
                .append(", \"behind_s\": ")
                .append(DeviceSummary.Json.number(r.behindSeconds()))
                .append(", \"fetch_s\": ")
                .append(fetch == null ? "null" : DeviceSummary.Json.number(fetch.seconds()))
                .append(", \"fetch_cpu_s\": ")
                .append(fetch == null ? "null" : DeviceSummary.Json.number(fetch.cpuSeconds()))
                .append(", \"transform_s\": ")
                .append(fetch == null ? "null" : DeviceSummary.Json.number(r.transformSeconds()))
                .append("},\n");
        RunReport.CacheCounts cc = o.caseCache();
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
        b.append("  \"cpu\": {\"cores\": ").append(c.cores());
        b.append(", \"process_cpu_s\": ")
                .append(
                        DeviceSummary.Json.number(
                                r.measured == null ? Double.NaN : r.measured.processCpuSeconds()))
                .append("},\n");
        RunReport.Workers w = c.workers();
        b.append("  \"workers\": ");
        b.append("{\"fast\": ").append(w.fast()).append(", \"slow\": ").append(w.slow());
        b.append(", \"auto\": ").append(w.auto()).append(", \"active_mean\": ");
        b.append(
                        o.activeWorkersMean() == null
                                ? "null"
                                : DeviceSummary.Json.number(
                                        Math.round(o.activeWorkersMean() * 100) / 100.0))
                .append(", \"sent_as_bytes\": ")
                .append(o.crossed() == null ? "null" : o.crossed().asBytes())
                .append(", \"sent_in_pieces\": ")
                .append(o.crossed() == null ? "null" : o.crossed().inPieces())
                .append("},\n");
        appendTaskManagers();
        appendCheckpoints();
        appendMemory();
        b.append("  \"bound_s\": ").append(DeviceSummary.Json.number(r.boundSeconds)).append(",\n");
        appendEpochs();
        b.append("  \"timeout_ms\": ")
                .append(o.timeoutMs() == null ? "null" : DeviceSummary.Json.number(o.timeoutMs()))
                .append(",\n");
        b.append("  \"loss\": ");
        b.append(
                Double.isNaN(r.firstLoss)
                        ? "null"
                        : "{\"first\": "
                                + DeviceSummary.Json.number(r.firstLoss)
                                + ", \"last\": "
                                + DeviceSummary.Json.number(r.lastLoss)
                                + "}");
        b.append(",\n");
        TrainingSettings opt = c.optimizer();
        b.append("  \"optimizer\": ");
        b.append(
                opt == null
                        ? "null"
                        : "{\"name\": \"sgd\", \"learning_rate\": "
                                + decimal(opt.learningRate())
                                + ", \"momentum\": "
                                + decimal(opt.momentum())
                                + ", \"weight_decay\": "
                                + decimal(opt.weightDecay())
                                + ", \"nesterov\": "
                                + opt.nesterov()
                                + ", \"warmup_steps\": "
                                + opt.warmupSteps()
                                + ", \"warmup_start_lr\": "
                                + decimal(opt.warmupStartLearningRate())
                                + ", \"decay_steps\": "
                                + opt.decaySteps()
                                + ", \"decay_factor\": "
                                + decimal(opt.decayFactor())
                                + ", \"schedule\": "
                                + DeviceSummary.Json.quote(schedule(opt))
                                + ", \"network\": "
                                + DeviceSummary.Json.quote(opt.network().modelName())
                                + ", \"width\": "
                                + DeviceSummary.Json.number(opt.width())
                                + ", \"precision\": "
                                + DeviceSummary.Json.quote(opt.precision().label())
                                + "}");
        b.append(",\n");
        RunReport.Dice d = o.dice();
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
        RunReport.Accuracy a = o.accuracy();
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
        List<RunReport.Quarantine> quarantine = r.quarantine();
        b.append("  \"quarantine\": [");
        for (int i = 0; i < quarantine.size(); i++) {
            RunReport.Quarantine q = quarantine.get(i);
            b.append(i == 0 ? "\n    " : ",\n    ")
                    .append("{\"file\": ")
                    .append(DeviceSummary.Json.quote(q.file()))
                    .append(", \"reason\": ")
                    .append(DeviceSummary.Json.quote(q.reason()))
                    .append("}");
        }
        b.append(quarantine.isEmpty() ? "]\n" : "\n  ]\n");
        b.append("}\n");
        return b.toString();
    }

    /**
     * The first epoch apart from the later ones: the first meets every case cold (its files mapped,
     * its foreground components scanned), the later ones show the steady state. {@code
     * first_epoch.wall_s} runs from the first request to the end of the last step that held an
     * epoch-0 sample, {@code samples} counts every sample trained by then (a loader that runs ahead
     * trains some of epoch 1 before the last of epoch 0); {@code later_epochs} is the rest of the
     * run. Null when no epoch-0 sample was trained; {@code later_epochs} null with one epoch.
     */
    private void appendEpochs() {
        b.append("  \"first_epoch\": ");
        if (r.firstEpochEnd == 0 || r.wallSeconds == 0) {
            b.append("null,\n  \"later_epochs\": null,\n");
            return;
        }
        double first =
                Math.min(r.wallSeconds, Math.max(0, r.firstEpochEnd - r.startMillis) / 1000.0);
        b.append("{\"wall_s\": ").append(DeviceSummary.Json.number(first));
        b.append(", \"samples\": ").append(r.samplesAtFirstEpochEnd).append("},\n");
        b.append("  \"later_epochs\": ");
        long later = r.delivered - r.samplesAtFirstEpochEnd;
        double laterSeconds = r.wallSeconds - first;
        if (c.epochs() < 2 || later <= 0) {
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
     * From this process's start to its first sample request: what a user waits for after the
     * command (JVM, checks, Flink's start-up, the job's deployment); null when either is unknown.
     */
    private String startSeconds() {
        if (r.measured == null || o.firstRequestMillis() == null) {
            return "null";
        }
        long jvm = r.measured.processStartMillis();
        long first = o.firstRequestMillis();
        if (first < jvm) {
            return "null";
        }
        return DeviceSummary.Json.number((first - jvm) / 1000.0);
    }

    /** The job's checkpoints and restores as its trainers' coordinator counted them, or null. */
    private void appendCheckpoints() {
        RunReport.Checkpoints k = r.checkpoints;
        b.append("  \"checkpoints\": ");
        if (k == null) {
            b.append("null,\n");
            return;
        }
        b.append("{\"completed\": ").append(k.completed());
        b.append(", \"failed\": ").append(k.failed());
        b.append(", \"timed_out\": ").append(k.timedOut());
        b.append(", \"longest_pending_s\": ")
                .append(DeviceSummary.Json.number(k.longestPendingSeconds()));
        b.append(", \"restores\": ").append(k.restores()).append("},\n");
    }

    /**
     * Each TaskManager's part, with its CPU per sample trained in the whole job (a trainer's
     * TaskManager receives every sample; a preparer's prepares its share); null when the job did
     * not say.
     */
    private void appendTaskManagers() {
        b.append("  \"task_managers\": ");
        if (o.taskManagers() == null) {
            b.append("null,\n");
            return;
        }
        b.append('[');
        String sep = "";
        for (RunReport.TaskManager tm : o.taskManagers()) {
            b.append(sep).append("{\"id\": ").append(DeviceSummary.Json.quote(tm.id()));
            b.append(", \"workers\": ").append(tm.workers());
            b.append(", \"trainers\": ").append(tm.trainers());
            b.append(", \"process_cpu_s\": ")
                    .append(DeviceSummary.Json.number(Math.round(tm.cpuSeconds() * 100) / 100.0));
            b.append(", \"cpu_ms_per_sample\": ")
                    .append(
                            r.delivered > 0
                                    ? DeviceSummary.Json.number(
                                            Math.round(tm.cpuSeconds() * 1e4 / r.delivered) / 10.0)
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

    /**
     * Resident memory of the training process (the embedded run; null under {@code flink run}, or
     * without a reading after the first epoch): peaks over the first epoch and over the run, in all
     * and anonymous (heap, native buffers, model) apart from the mapped data set's pages.
     */
    private void appendMemory() {
        b.append("  \"memory\": ");
        if (r.memory == null) {
            b.append("null,\n");
            return;
        }
        b.append("{\"peak_rss_mb\": ").append(mb(r.memory.peakRss()));
        b.append(", \"peak_anon_mb\": ").append(mb(r.memory.peakAnon()));
        b.append(", \"first_epoch_peak_anon_mb\": ").append(mb(r.memory.firstEpochPeakAnon()));
        b.append(", \"later_halves_peak_anon_mb\": [")
                .append(mb(r.memory.laterFirstHalfPeakAnon()))
                .append(", ")
                .append(mb(r.memory.laterSecondHalfPeakAnon()))
                .append("]");
        b.append(", \"anon_growth_over_later_epochs\": ")
                .append(
                        DeviceSummary.Json.number(
                                Math.round(r.memory.anonGrowthOverLaterEpochs() * 1e4) / 1e4))
                .append("},\n");
    }

    private static String mb(long bytes) {
        return DeviceSummary.Json.number(Math.round(bytes / 1048576.0 * 10) / 10.0);
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
}
