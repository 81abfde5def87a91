package io.minato.job.profile;

import io.minato.data.BadInputException;
import io.minato.data.EpochOrder;
import io.minato.job.DataOptions;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.kits19.KitsData;
import io.minato.spi.SampleKey;
import io.minato.stats.CpuClock;
import io.minato.stats.Distribution;
import io.minato.workload.kits19.CaseCache;
import io.minato.workload.kits19.CaseCheck;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.TransformConfig;
import io.minato.workload.kits19.Volume;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Prepares every training sample of some epochs exactly as the loader would and prints the
 * distribution of per-sample preparation time, overall and per transform.
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
            throw new picocli.CommandLine.ParameterException(
                    spec.commandLine(), "--epochs and --threads must be >= 1");
        }
        Optional<String> refused = data.workload.refusesProfile();
        if (refused.isPresent()) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), refused.get());
        }
        PrintWriter out = spec.commandLine().getOut();
        DataSpec samples = data.spec();
        KitsData.Cases cases = KitsData.cases(samples, spec.commandLine().getErr());
        List<CaseFiles> train = cases.train();
        Profile profile = run(train, samples.transformConfig(), cases.cache());
        out.printf(
                Locale.ROOT,
                "profile: %s, %d training cases (%d held out, %d quarantined), patch %d^3, seed %d,"
                        + " %d epoch(s), %d thread(s)%n",
                cases.dir(),
                train.size(),
                cases.eval(),
                cases.quarantined(),
                data.patchEdge(),
                data.seed,
                epochs,
                threads);
        profile.print(out);
        out.flush();
        return 0;
    }

    private Profile run(List<CaseFiles> train, TransformConfig config, CaseCache cache)
            throws Exception {
        Profile profile = new Profile();
        CaseCache.Counters counters = new CaseCache.Counters();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Sample>> futures = new ArrayList<>();
            for (int epoch = 0; epoch < epochs; epoch++) {
                int[] order = EpochOrder.permutation(data.seed, epoch, train.size());
                for (int i = 0; i < order.length; i++) {
                    SampleKey key = new SampleKey(data.seed, epoch, i);
                    CaseFiles c = train.get(order[i]);
                    futures.add(pool.submit(() -> Sample.prepare(key, c, config, cache, counters)));
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

    /** The timings of one prepared sample. */
    record Sample(
            SampleKey key,
            String caseName,
            boolean foreground,
            long readNanos,
            long[] transformNanos,
            long cpuNanos,
            long wallNanos) {

        static Sample prepare(
                SampleKey key,
                CaseFiles c,
                TransformConfig config,
                CaseCache cache,
                CaseCache.Counters counters)
                throws BadInputException {
            long wall0 = System.nanoTime();
            long cpu0 = CpuClock.threadNanos();
            Volume volume = CaseCheck.open(c).withMemo(cache.memo(c, counters));
            long read = CpuClock.threadNanos() - cpu0;
            long[] perTransform = new long[Preparation.Transform.values().length];
            Preparation p = Preparation.start(key);
            while (!p.isDone()) {
                long t0 = CpuClock.threadNanos();
                Preparation.Transform t = p.advance(volume, config);
                perTransform[t.ordinal()] += CpuClock.threadNanos() - t0;
            }
            long cpu = CpuClock.threadNanos() - cpu0;
            return new Sample(
                    key,
                    c.name(),
                    p.isForegroundCrop(),
                    read,
                    perTransform,
                    cpu,
                    System.nanoTime() - wall0);
        }
    }

    /** Distributions over the prepared samples. */
    static final class Profile {
        final Distribution cpu = new Distribution();
        final Distribution wall = new Distribution();
        final Distribution read = new Distribution();
        final Distribution[] transforms = new Distribution[Preparation.Transform.values().length];
        final Distribution foregroundCrops = new Distribution();
        final Distribution uniformCrops = new Distribution();
        final Distribution laterForegroundCrops = new Distribution();
        final Distribution laterUniformCrops = new Distribution();
        Sample slowest;

        Profile() {
            for (int i = 0; i < transforms.length; i++) {
                transforms[i] = new Distribution();
            }
        }

        void add(Sample s) {
            cpu.add(s.cpuNanos() / 1e6);
            wall.add(s.wallNanos() / 1e6);
            read.add(s.readNanos() / 1e6);
            for (int i = 0; i < transforms.length; i++) {
                transforms[i].add(s.transformNanos()[i] / 1e6);
            }
            double crop = s.transformNanos()[Preparation.Transform.CROP.ordinal()] / 1e6;
            (s.foreground() ? foregroundCrops : uniformCrops).add(crop);
            if (s.key().epoch() > 0) {
                (s.foreground() ? laterForegroundCrops : laterUniformCrops).add(crop);
            }
            if (slowest == null || s.cpuNanos() > slowest.cpuNanos()) {
                slowest = s;
            }
        }

        void print(PrintWriter out) {
            out.printf(
                    Locale.ROOT,
                    "%-34s %7s %9s %9s %9s %9s %10s%n",
                    "ms per sample",
                    "n",
                    "p50",
                    "p90",
                    "p99",
                    "max",
                    "sum");
            row(out, "prepare, CPU", cpu);
            row(out, "prepare, wall", wall);
            row(out, "  open + map .npy (CPU)", read);
            for (Preparation.Transform t : Preparation.Transform.values()) {
                row(out, "  " + t.label() + " (CPU)", transforms[t.ordinal()]);
            }
            row(out, "  crop, foreground-centred (CPU)", foregroundCrops);
            row(out, "  crop, uniform (CPU)", uniformCrops);
            if (laterForegroundCrops.summary().count() + laterUniformCrops.summary().count() > 0) {
                // With the case cache on, a case is scanned once: epochs after the first show
                // what a foreground crop costs once its components are remembered.
                row(out, "  crop, foreground, epochs 2+ (CPU)", laterForegroundCrops);
                row(out, "  crop, uniform, epochs 2+ (CPU)", laterUniformCrops);
            }
            Distribution.Summary all = cpu.summary();
            out.printf(
                    Locale.ROOT,
                    "tail: max / p50 = %.1fx; slowest sample %s (epoch %d, index %d, %s crop) %.2f ms%n",
                    all.p50() > 0 ? all.max() / all.p50() : 0,
                    slowest.caseName(),
                    slowest.key().epoch(),
                    slowest.key().index(),
                    slowest.foreground() ? "foreground" : "uniform",
                    slowest.cpuNanos() / 1e6);
        }

        private static void row(PrintWriter out, String name, Distribution d) {
            Distribution.Summary s = d.summary();
            out.printf(
                    Locale.ROOT,
                    "%-34s %7d %9.3f %9.3f %9.3f %9.3f %10.1f%n",
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
