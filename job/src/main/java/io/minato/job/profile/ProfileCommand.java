package io.minato.job.profile;

import io.minato.data.BadInputException;
import io.minato.data.EpochOrder;
import io.minato.job.DataOptions;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.TrainingSet;
import io.minato.spi.MemoStats;
import io.minato.spi.SampleKey;
import io.minato.spi.Steps;
import io.minato.spi.Workload;
import io.minato.stats.CpuClock;
import io.minato.stats.Distribution;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Prepares every training sample of some epochs exactly as the loader would (the workload's own
 * steps, through the same {@link Workload} the workers use) and prints the distribution of
 * per-sample preparation time: overall, per transform (each step's {@link Steps#stepName}), per
 * kind of sample ({@link Steps#variant}), and for the epochs after the first, when what a sample's
 * files alone decide is remembered.
 */
@Command(
        name = "profile",
        mixinStandardHelpOptions = true,
        description = "Print the distribution of per-sample preparation time (CPU ms) over epochs.")
public final class ProfileCommand implements Callable<Integer> {

    @Mixin DataOptions data = new DataOptions();

    @Option(
            names = "--epochs",
            paramLabel = "E",
            description = "Epochs to prepare (default: ${DEFAULT-VALUE}).")
    int epochs = 1;

    @Option(
            names = "--threads",
            paramLabel = "T",
            description =
                    "Threads preparing samples (default: ${DEFAULT-VALUE}; 1 keeps timings clean).")
    int threads = 1;

    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (epochs < 1 || threads < 1) {
            throw new ParameterException(spec.commandLine(), "--epochs and --threads must be >= 1");
        }
        DataSpec samples = data.spec();
        try {
            samples.workload().check(samples);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        PrintWriter out = spec.commandLine().getOut();
        TrainingSet set = samples.workload().open(samples, spec.commandLine().getErr());
        Workload<?> workload = set.workload();
        Profile profile = run(workload);
        out.printf(
                Locale.ROOT,
                "profile: %s, %d training %s (%d held out, %d quarantined), %s, seed %d,"
                        + " %d epoch(s), %d thread(s)%n",
                set.dir(),
                set.train(),
                set.unit(),
                set.eval(),
                set.quarantine().size(),
                samples.workload().edgeLine(samples.patchEdge()),
                samples.seed(),
                epochs,
                threads);
        profile.print(out, workload.memo());
        out.flush();
        return 0;
    }

    private <S> Profile run(Workload<S> workload) throws Exception {
        Profile profile = new Profile();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Sample>> futures = new ArrayList<>();
            for (int epoch = 0; epoch < epochs; epoch++) {
                int[] order = EpochOrder.permutation(data.seed, epoch, workload.size());
                for (int i = 0; i < order.length; i++) {
                    SampleKey key = new SampleKey(data.seed, epoch, i);
                    int index = order[i];
                    futures.add(pool.submit(() -> Sample.prepare(workload, key, index)));
                }
            }
            for (Future<Sample> f : futures) {
                try {
                    profile.add(f.get());
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof Exception ex ? ex : e;
                }
            }
        } finally {
            pool.shutdownNow();
        }
        return profile;
    }

    /** The timings of one prepared sample: CPU ns per transform, by name, in the order run. */
    record Sample(
            SampleKey key,
            String name,
            String variant,
            long openNanos,
            Map<String, Long> transformNanos,
            long cpuNanos,
            long wallNanos) {

        static <S> Sample prepare(Workload<S> workload, SampleKey key, int index)
                throws BadInputException {
            long wall0 = System.nanoTime();
            long cpu0 = CpuClock.threadNanos();
            S source = workload.open(index);
            long open = CpuClock.threadNanos() - cpu0;
            Map<String, Long> perTransform = new LinkedHashMap<>();
            Steps<S> steps = workload.start(key);
            try {
                while (!steps.isDone()) {
                    String name = steps.stepName();
                    long t0 = CpuClock.threadNanos();
                    steps.advance(source);
                    perTransform.merge(name, CpuClock.threadNanos() - t0, Long::sum);
                }
                workload.checkUnchanged(index);
            } catch (InternalError fault) {
                throw workload.changedWhileRead(index, fault);
            }
            long cpu = CpuClock.threadNanos() - cpu0;
            return new Sample(
                    key,
                    workload.samples().displayName(index),
                    steps.variant(),
                    open,
                    perTransform,
                    cpu,
                    System.nanoTime() - wall0);
        }
    }

    /** Distributions over the prepared samples. */
    static final class Profile {
        final Distribution cpu = new Distribution();
        final Distribution wall = new Distribution();
        final Distribution open = new Distribution();

        /**
         * Per transform, in the order first seen, over every sample: 0 where a sample had none of
         * it (the samples before a transform first came count 0 there).
         */
        final Map<String, Distribution> transforms = new LinkedHashMap<>();

        final Map<String, Distribution> variants = new TreeMap<>();
        final Distribution later = new Distribution();
        final Map<String, Distribution> laterVariants = new TreeMap<>();
        Sample slowest;

        void add(Sample s) {
            double ms = s.cpuNanos() / 1e6;
            for (String t : s.transformNanos().keySet()) {
                transforms.computeIfAbsent(
                        t,
                        k -> {
                            Distribution none = new Distribution();
                            for (int i = 0; i < cpu.count(); i++) {
                                none.add(0);
                            }
                            return none;
                        });
            }
            transforms.forEach((t, d) -> d.add(s.transformNanos().getOrDefault(t, 0L) / 1e6));
            cpu.add(ms);
            wall.add(s.wallNanos() / 1e6);
            open.add(s.openNanos() / 1e6);
            if (s.variant() != null) {
                variants.computeIfAbsent(s.variant(), v -> new Distribution()).add(ms);
            }
            if (s.key().epoch() > 0) {
                // What a sample's files alone decide is remembered by now (the case cache, the
                // decoded images): what the samples cost from the second epoch on.
                later.add(ms);
                if (s.variant() != null) {
                    laterVariants.computeIfAbsent(s.variant(), v -> new Distribution()).add(ms);
                }
            }
            if (slowest == null || s.cpuNanos() > slowest.cpuNanos()) {
                slowest = s;
            }
        }

        void print(PrintWriter out, MemoStats memo) {
            out.printf(
                    Locale.ROOT,
                    "%-42s %7s %9s %9s %9s %9s %10s%n",
                    "ms per sample",
                    "n",
                    "p50",
                    "p90",
                    "p99",
                    "max",
                    "sum");
            row(out, "prepare, CPU", cpu);
            row(out, "prepare, wall", wall);
            row(out, "  open (CPU)", open);
            transforms.forEach((t, d) -> row(out, "  " + t + " (CPU)", d));
            variants.forEach((v, d) -> row(out, "prepare, " + v + " (CPU)", d));
            if (later.count() > 0) {
                row(out, "prepare, epochs 2+ (CPU)", later);
                laterVariants.forEach((v, d) -> row(out, "  " + v + ", epochs 2+ (CPU)", d));
            }
            if (memo.hits() + memo.misses() > 0) {
                // What a sample's files alone decide: kits19's foreground components (also kept
                // on disk, so found from the first epoch of a second profile), decoded images.
                out.printf(
                        Locale.ROOT,
                        "remembered per sample's files: %d found, %d computed%s%n",
                        memo.hits(),
                        memo.misses(),
                        memo.bytes() > 0 ? ", " + held(memo.bytes()) + " held in memory" : "");
            }
            Distribution.Summary all = cpu.summary();
            out.printf(
                    Locale.ROOT,
                    "tail: max / p50 = %.1fx; slowest sample %s (epoch %d, index %d%s) %.2f ms%n",
                    all.p50() > 0 ? all.max() / all.p50() : 0,
                    slowest.name(),
                    slowest.key().epoch(),
                    slowest.key().index(),
                    slowest.variant() == null ? "" : ", " + slowest.variant(),
                    slowest.cpuNanos() / 1e6);
        }

        private static String held(long bytes) {
            return bytes < 1 << 20
                    ? String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0)
                    : String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024.0));
        }

        private static void row(PrintWriter out, String name, Distribution d) {
            Distribution.Summary s = d.summary();
            out.printf(
                    Locale.ROOT,
                    "%-42s %7d %9.3f %9.3f %9.3f %9.3f %10.1f%n",
                    name,
                    s.count(),
                    s.p50(),
                    s.p90(),
                    s.p99(),
                    s.max(),
                    s.sum());
        }
    }
}
