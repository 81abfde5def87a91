package io.minato.job.report;

import io.minato.sample.SamplePath;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.CategoryStyler;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.XYStyler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * A run's own plots, written into its run directory when it ends: {@value #USAGE}, the
 * accelerators' busy share and the process's CPU use over time (as the MinatoLoader artifact's
 * usage plots: a loader that keeps the accelerator fed shows busy near 100 %; a detached run's
 * shows the busy share only, from the steps' times in its traces); and {@value #PREP_TIMES}, how
 * the samples' preparation CPU times spread, fast path and slow path apart (on logarithmic bins:
 * the tail is what the split is about). Drawn with XChart.
 */
public final class RunPlots {
    public static final String USAGE = "usage.png";
    public static final String PREP_TIMES = "prep-times.png";

    static final int WIDTH = 960;
    static final int HEIGHT = 540;
    static final int BINS = 20;
    static final long WINDOW_MILLIS = 1000;

    private RunPlots() {}

    /**
     * The usage over time: seconds since the first reading (taken as the job is submitted, so the
     * embedded cluster's start shows as CPU without busy), and percentages of capacity; {@code
     * cpuPercent} null where only the steps' times are known.
     */
    record Usage(double[] seconds, double[] busyPercent, double[] cpuPercent) {}

    /** Counts per logarithmic bin: each bin's upper edge in ms, and its fast and slow counts. */
    record Histogram(double[] upperMillis, int[] fast, int[] slow) {}

    /**
     * Writes the plots there is data for into {@code dir}: usage from the {@code samples} of a run
     * with {@code devices} accelerators on {@code cores} cores, preparation times from {@code
     * prepMillis}. Returns the files written. Text needs a font: without one this fails with an
     * IOException saying what to install.
     */
    public static List<Path> write(
            Path dir,
            List<RunSampler.Sample> samples,
            int devices,
            int cores,
            Map<SamplePath, List<Double>> prepMillis)
            throws IOException {
        return write(dir, usage(samples, devices, cores), devices, cores, prepMillis);
    }

    /**
     * Writes the plots of a run no process of its own watched ({@code flink run -d}): the
     * accelerators' busy share over time from the {@code steps} they trained, {start, end} wall
     * millis each (the traces keep them), without a CPU line; preparation times as {@link #write}.
     */
    public static List<Path> writeFromSteps(
            Path dir, List<long[]> steps, int devices, Map<SamplePath, List<Double>> prepMillis)
            throws IOException {
        return write(dir, busyFromSteps(steps, devices), devices, 0, prepMillis);
    }

    private static List<Path> write(
            Path dir, Usage usage, int devices, int cores, Map<SamplePath, List<Double>> prepMillis)
            throws IOException {
        List<Path> written = new ArrayList<>();
        if (usage != null) {
            written.add(ChartFiles.save(usageChart(usage, devices, cores), dir.resolve(USAGE)));
        }
        Histogram h = histogram(prepMillis);
        if (h != null) {
            written.add(ChartFiles.save(prepChart(h), dir.resolve(PREP_TIMES)));
        }
        return written;
    }

    /**
     * Busy and CPU shares over the second before each reading ({@value #WINDOW_MILLIS} ms back to
     * the latest reading at least that old, else the first): the busy total grows at each step's
     * end, so shares between readings a quarter second apart would swing with where the step ends
     * fell. Readings without both totals are skipped; after a restore the busy total can step back
     * to the checkpoint's, and such a window counts as 0. Null with fewer than two readings.
     */
    static Usage usage(List<RunSampler.Sample> samples, int devices, int cores) {
        List<RunSampler.Sample> read = new ArrayList<>();
        for (RunSampler.Sample s : samples) {
            if (s.cpuNanos() >= 0 && s.busyNanos() >= 0) {
                read.add(s);
            }
        }
        if (read.size() < 2) {
            return null;
        }
        long t0 = read.get(0).millis();
        List<double[]> points = new ArrayList<>();
        int from = 0;
        for (int k = 1; k < read.size(); k++) {
            RunSampler.Sample b = read.get(k);
            while (from + 1 < k && read.get(from + 1).millis() <= b.millis() - WINDOW_MILLIS) {
                from++;
            }
            RunSampler.Sample a = read.get(from);
            double nanos = (b.millis() - a.millis()) * 1e6;
            if (nanos <= 0) {
                continue;
            }
            points.add(
                    new double[] {
                        (b.millis() - t0) / 1000.0,
                        share(b.busyNanos() - a.busyNanos(), nanos * devices),
                        share(b.cpuNanos() - a.cpuNanos(), nanos * cores)
                    });
        }
        if (points.isEmpty()) {
            return null;
        }
        double[] x = new double[points.size()];
        double[] busy = new double[points.size()];
        double[] cpu = new double[points.size()];
        for (int k = 0; k < points.size(); k++) {
            x[k] = points.get(k)[0];
            busy[k] = points.get(k)[1];
            cpu[k] = points.get(k)[2];
        }
        return new Usage(x, busy, cpu);
    }

    /**
     * The devices' busy share in each second from the first step's start to the last step's end:
     * the part of every step's span that falls in the second, over {@code devices} seconds; each
     * second's share at its start and at its end, a step line. Null without a step.
     */
    static Usage busyFromSteps(List<long[]> steps, int devices) {
        if (steps.isEmpty() || devices < 1) {
            return null;
        }
        long t0 = Long.MAX_VALUE;
        long t1 = Long.MIN_VALUE;
        for (long[] s : steps) {
            t0 = Math.min(t0, s[0]);
            t1 = Math.max(t1, s[1]);
        }
        int windows = (int) Math.max(1, (t1 - t0 + WINDOW_MILLIS - 1) / WINDOW_MILLIS);
        double[] busyMillis = new double[windows];
        for (long[] s : steps) {
            if (s[1] <= s[0]) {
                continue;
            }
            int last = (int) Math.min(windows - 1, (s[1] - 1 - t0) / WINDOW_MILLIS);
            for (int w = (int) ((s[0] - t0) / WINDOW_MILLIS); w <= last; w++) {
                long from = t0 + w * WINDOW_MILLIS;
                busyMillis[w] += Math.min(s[1], from + WINDOW_MILLIS) - Math.max(s[0], from);
            }
        }
        // A step line: each second's share from its start to its end; the last second ends with
        // the last step.
        double[] x = new double[2 * windows];
        double[] busy = new double[2 * windows];
        for (int w = 0; w < windows; w++) {
            long from = w * WINDOW_MILLIS;
            long to = Math.min(from + WINDOW_MILLIS, t1 - t0);
            x[2 * w] = from / 1000.0;
            x[2 * w + 1] = to / 1000.0;
            busy[2 * w] = busy[2 * w + 1] = share(busyMillis[w], (double) (to - from) * devices);
        }
        return new Usage(x, busy, null);
    }

    private static double share(double used, double capacity) {
        return Math.max(0, Math.min(100, 100 * used / capacity));
    }

    /**
     * The preparation times on {@value #BINS} logarithmic bins from the smallest to the largest
     * (one bin when they are all alike); null without any sample.
     */
    static Histogram histogram(Map<SamplePath, List<Double>> prepMillis) {
        List<Double> fast = prepMillis.getOrDefault(SamplePath.FAST, List.of());
        List<Double> slow = prepMillis.getOrDefault(SamplePath.SLOW, List.of());
        double min = Double.POSITIVE_INFINITY;
        double max = 0;
        for (List<Double> times : List.of(fast, slow)) {
            for (double t : times) {
                min = Math.min(min, t);
                max = Math.max(max, t);
            }
        }
        if (fast.isEmpty() && slow.isEmpty()) {
            return null;
        }
        // A zero time (below the clock's resolution) goes into the first bin.
        double low = Math.max(min, 1e-3);
        int bins = max <= low ? 1 : BINS;
        double ratio = bins == 1 ? 1 : Math.pow(max / low, 1.0 / bins);
        double[] upper = new double[bins];
        for (int b = 0; b < bins; b++) {
            upper[b] = b == bins - 1 ? Math.max(max, low) : low * Math.pow(ratio, b + 1);
        }
        return new Histogram(upper, counts(fast, upper), counts(slow, upper));
    }

    private static int[] counts(List<Double> times, double[] upper) {
        int[] n = new int[upper.length];
        for (double t : times) {
            int b = 0;
            while (b < upper.length - 1 && t > upper[b]) {
                b++;
            }
            n[b]++;
        }
        return n;
    }

    private static XYChart usageChart(Usage u, int devices, int cores) {
        boolean cpu = u.cpuPercent() != null;
        XYChart chart =
                new XYChartBuilder()
                        .width(WIDTH)
                        .height(HEIGHT)
                        .title(
                                cpu
                                        ? "Accelerator busy and CPU use over the run"
                                        : "Accelerator busy over the run")
                        .xAxisTitle(
                                cpu
                                        ? "seconds since the job was submitted"
                                        : "seconds since the first step began")
                        .yAxisTitle("% of capacity")
                        .build();
        XYStyler style = chart.getStyler();
        style.setYAxisMin(0.0);
        style.setYAxisMax(100.0);
        style.setLegendPosition(Styler.LegendPosition.OutsideS);
        style.setChartBackgroundColor(Color.WHITE);
        line(chart, "accelerator busy (" + devices + " device(s))", u.seconds(), u.busyPercent());
        if (cpu) {
            line(chart, "process CPU (" + cores + " cores)", u.seconds(), u.cpuPercent());
        }
        return chart;
    }

    private static void line(XYChart chart, String name, double[] x, double[] y) {
        XYSeries s = chart.addSeries(name, x, y);
        s.setMarker(SeriesMarkers.NONE);
        s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
    }

    private static CategoryChart prepChart(Histogram h) {
        CategoryChart chart =
                new CategoryChartBuilder()
                        .width(WIDTH)
                        .height(HEIGHT)
                        .title("Preparation CPU time per sample, fast and slow path")
                        .xAxisTitle("ms (upper edge of each logarithmic bin)")
                        .yAxisTitle("samples")
                        .build();
        CategoryStyler style = chart.getStyler();
        style.setLegendPosition(Styler.LegendPosition.InsideNE);
        style.setXAxisLabelRotation(45);
        style.setYAxisDecimalPattern("#");
        style.setChartBackgroundColor(Color.WHITE);
        List<String> labels = new ArrayList<>();
        for (double u : h.upperMillis()) {
            labels.add(String.format(Locale.ROOT, "%.3g", u));
        }
        chart.addSeries("fast path", labels, boxed(h.fast()));
        if (total(h.slow()) > 0) {
            chart.addSeries("slow path", labels, boxed(h.slow()));
        }
        return chart;
    }

    private static List<Integer> boxed(int[] counts) {
        List<Integer> l = new ArrayList<>();
        for (int c : counts) {
            l.add(c);
        }
        return l;
    }

    private static int total(int[] counts) {
        int t = 0;
        for (int c : counts) {
            t += c;
        }
        return t;
    }
}
