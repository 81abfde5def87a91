package io.minato.job.report;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * Reads, at a fixed period, this process's resident memory from {@code /proc/self/status}, its CPU
 * time, and the trainers' busy time so far: for the report's {@code memory} (whether it stays flat
 * after the first epoch) and the run's usage plot ({@link RunPlots}). Anonymous memory (heap,
 * native buffers, the model) is told apart from the mapped data set's pages, which grow with how
 * much of the data the run has touched and are not a leak. Where there is no {@code /proc} (not
 * Linux) nothing is sampled.
 */
public final class RunSampler {
    private static final Path STATUS = Path.of("/proc/self/status");

    /**
     * One reading: wall-clock millis, resident bytes in all and anonymous ones, the process's CPU
     * time and the trainers' busy time summed over devices (nanoseconds; -1: not read).
     */
    public record Sample(long millis, long rssBytes, long anonBytes, long cpuNanos, long busyNanos)
            implements java.io.Serializable {}

    private final List<Sample> samples = new ArrayList<>();
    private final Thread thread;
    private final LongSupplier busyNanos;
    private volatile boolean stop;

    private RunSampler(Duration period, LongSupplier busyNanos) {
        this.busyNanos = busyNanos;
        thread =
                new Thread(
                        () -> {
                            while (!stop) {
                                read().ifPresent(this::add);
                                try {
                                    Thread.sleep(period.toMillis());
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        },
                        "run-sampler");
        thread.setDaemon(true);
    }

    /**
     * Starts sampling every {@code period}, the trainers' busy time from {@code busyNanos}; none at
     * all without {@code /proc}.
     */
    public static RunSampler start(Duration period, LongSupplier busyNanos) {
        RunSampler s = new RunSampler(period, busyNanos);
        if (Files.isReadable(STATUS)) {
            s.thread.start();
        }
        return s;
    }

    /** Stops, takes a last reading, and returns every reading in time order. */
    public List<Sample> stop() {
        stop = true;
        thread.interrupt();
        try {
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        read().ifPresent(this::add);
        synchronized (samples) {
            return List.copyOf(samples);
        }
    }

    private void add(Sample s) {
        synchronized (samples) {
            samples.add(s);
        }
    }

    /** A reading now; empty if {@code /proc} cannot say. */
    private Optional<Sample> read() {
        try {
            long millis = System.currentTimeMillis();
            return parse(millis, Files.readString(STATUS, StandardCharsets.US_ASCII))
                    .map(
                            m ->
                                    new Sample(
                                            millis,
                                            m.rssBytes(),
                                            m.anonBytes(),
                                            cpuNanos(),
                                            busyNanos.getAsLong()));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** This process's CPU time; -1 where the JVM cannot say. */
    public static long cpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }

    /**
     * The kB fields VmRSS and RssAnon of a {@code /proc/<pid>/status} text (CPU and busy time not
     * read: -1).
     */
    static Optional<Sample> parse(long millis, String status) {
        long rss = -1;
        long anon = -1;
        for (String line : status.split("\n")) {
            if (line.startsWith("VmRSS:")) {
                rss = kiloBytes(line);
            } else if (line.startsWith("RssAnon:")) {
                anon = kiloBytes(line);
            }
        }
        return rss < 0 || anon < 0
                ? Optional.empty()
                : Optional.of(new Sample(millis, rss * 1024, anon * 1024, -1, -1));
    }

    private static long kiloBytes(String line) {
        String[] f = line.trim().split("\\s+");
        return Long.parseLong(f[1]);
    }

    /**
     * Peaks over the first epoch and over the two halves (in time) of the later epochs: the first
     * epoch is mostly start-up, while the heap grows to its working size, so whether memory stays
     * flat shows between the later halves. Null without a reading in the first epoch and in each
     * later half.
     */
    public static Memory summarize(List<Sample> samples, long firstEpochEndMillis) {
        long firstAnon = -1;
        long rss = -1;
        long anon = -1;
        List<Sample> later = new ArrayList<>();
        for (Sample s : samples) {
            anon = Math.max(anon, s.anonBytes());
            rss = Math.max(rss, s.rssBytes());
            if (s.millis() <= firstEpochEndMillis) {
                firstAnon = Math.max(firstAnon, s.anonBytes());
            } else {
                later.add(s);
            }
        }
        if (firstAnon < 0 || later.size() < 2) {
            return null;
        }
        long middle = (later.get(0).millis() + later.get(later.size() - 1).millis()) / 2;
        long firstHalf = -1;
        long secondHalf = -1;
        for (Sample s : later) {
            if (s.millis() <= middle) {
                firstHalf = Math.max(firstHalf, s.anonBytes());
            } else {
                secondHalf = Math.max(secondHalf, s.anonBytes());
            }
        }
        if (firstHalf < 0 || secondHalf < 0) {
            return null;
        }
        return new Memory(rss, anon, firstAnon, firstHalf, secondHalf);
    }

    /**
     * Peak resident bytes: in all and anonymous over the run, anonymous over the first epoch and
     * over each half of the later epochs.
     */
    public record Memory(
            long peakRss,
            long peakAnon,
            long firstEpochPeakAnon,
            long laterFirstHalfPeakAnon,
            long laterSecondHalfPeakAnon) {
        /** How much the anonymous peak grew from the first to the second half of later epochs. */
        public double anonGrowthOverLaterEpochs() {
            return (double) laterSecondHalfPeakAnon / laterFirstHalfPeakAnon - 1;
        }
    }
}
