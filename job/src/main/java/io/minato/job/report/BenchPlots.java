package io.minato.job.report;

import io.minato.data.BadInputException;
import io.minato.json.Json;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * What {@code scripts/bench} measured, from its {@code bench.json} (an array of run reports, each
 * with {@code simulated_step_ms} and {@code rep} added): medians per loader and step time as a
 * table, and as PNG plots, {@code wall.png} (median wall time with min-max whiskers, and the median
 * {@code bound_s}) and {@code busy.png} (median accelerator busy %), drawn with XChart. Loaders and
 * step times are whatever the runs hold; loaders keep the order they first appear in, steps go up.
 *
 * <p>The table also tells the first epoch (every case cold) from the later ones: the median {@code
 * first_epoch.wall_s} and {@code later_epochs.samples_per_s}, "-" where the reports have none (one
 * epoch, or reports from before these fields).
 */
public final class BenchPlots {
    /** The plots {@link #write} makes. */
    public static final List<String> FILES = List.of("wall.png", "busy.png");

    /** Loader colours, in order (then made up by hue): blue, orange, green, red, purple, ... */
    private static final int[] PALETTE = {
        0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22
    };

    static final Color BOUND_COLOUR = new Color(0x44, 0x44, 0x44);

    /** The wall plot's series of the median bound, which no loader can beat. */
    static final String BOUND = "bound_s (median; no loader beats it)";

    /** What a loader's whisker series is named: its name and this. */
    static final String WHISKERS = " min-max";

    /** How far apart the whiskers of two loaders stand, as a share of the step axis's span. */
    static final double DODGE = 0.006;

    static final int WIDTH = 960;
    static final int HEIGHT = 600;

    private static final BasicStroke LINE =
            new BasicStroke(2.5f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND);
    private static final BasicStroke WHISKER = new BasicStroke(1.5f);
    private static final BasicStroke DASHED =
            new BasicStroke(
                    2f,
                    BasicStroke.CAP_BUTT,
                    BasicStroke.JOIN_ROUND,
                    10f,
                    new float[] {9f, 6f},
                    0f);

    /** The fields of one run that the table and plots use. */
    public record Run(
            String loader,
            double stepMs,
            int rep,
            double wallS,
            double busyFraction,
            double boundS,
            long slow,
            long delivered,
            Timings timings) {}

    /**
     * What a report may lack (NaN then): the first epoch's wall time, the later epochs' samples/s,
     * the job's start, and the trainers' waits split into head-of-line, behind and fetch.
     */
    public record Timings(
            double firstEpochS,
            double laterSamplesPerS,
            double startS,
            double headOfLineS,
            double behindS,
            double fetchS) {

        /** Each timing's median over {@code runs}. */
        static Timings median(List<Run> runs) {
            return new Timings(
                    BenchPlots.median(runs, r -> r.timings().firstEpochS()),
                    BenchPlots.median(runs, r -> r.timings().laterSamplesPerS()),
                    BenchPlots.median(runs, r -> r.timings().startS()),
                    BenchPlots.median(runs, r -> r.timings().headOfLineS()),
                    BenchPlots.median(runs, r -> r.timings().behindS()),
                    BenchPlots.median(runs, r -> r.timings().fetchS()));
        }
    }

    /** Medians over the runs of one loader at one step time. */
    public record Row(
            double stepMs,
            String loader,
            int runs,
            double wallS,
            double wallMin,
            double wallMax,
            double busyPercent,
            double slowPercent,
            double boundS,
            double wallOverBound,
            Timings timings) {}

    private final List<String> loaders;
    private final double[] steps;
    private final List<Row> rows = new ArrayList<>();
    private final double[] boundPerStep;

    public BenchPlots(List<Run> runs) {
        if (runs.isEmpty()) {
            throw new IllegalArgumentException("no runs");
        }
        Set<String> names = new LinkedHashSet<>();
        Set<Double> stepSet = new TreeSet<>();
        for (Run r : runs) {
            names.add(r.loader());
            stepSet.add(r.stepMs());
        }
        loaders = List.copyOf(names);
        steps = stepSet.stream().mapToDouble(Double::doubleValue).toArray();
        boundPerStep = new double[steps.length];
        for (int k = 0; k < steps.length; k++) {
            double step = steps[k];
            List<Run> atStep = runs.stream().filter(r -> r.stepMs() == step).toList();
            boundPerStep[k] = median(atStep, Run::boundS);
            for (String loader : loaders) {
                List<Run> g = atStep.stream().filter(r -> r.loader().equals(loader)).toList();
                if (g.isEmpty()) {
                    continue;
                }
                rows.add(
                        new Row(
                                step,
                                loader,
                                g.size(),
                                median(g, Run::wallS),
                                g.stream().mapToDouble(Run::wallS).min().orElseThrow(),
                                g.stream().mapToDouble(Run::wallS).max().orElseThrow(),
                                median(g, r -> 100 * r.busyFraction()),
                                median(g, r -> 100.0 * r.slow() / Math.max(1, r.delivered())),
                                median(g, Run::boundS),
                                median(g, r -> r.boundS() != 0 ? r.wallS() / r.boundS() : 0),
                                Timings.median(g)));
            }
        }
    }

    /**
     * Reads {@code bench.json}; a missing, unreadable or malformed file, or a run without a field
     * the plots need, gets one line naming the file and the problem.
     */
    public static List<Run> read(Path file) throws BadInputException {
        String text = ChartFiles.readInput(file, "scripts/bench");
        Object root;
        try {
            root = Json.parse(text);
        } catch (IllegalArgumentException e) {
            throw new BadInputException(file, "malformed JSON: " + e.getMessage());
        }
        if (!(root instanceof List<?> array)) {
            throw new BadInputException(file, "expected an array of run reports");
        }
        if (array.isEmpty()) {
            throw new BadInputException(file, "no runs in the array");
        }
        List<Run> runs = new ArrayList<>();
        for (int k = 0; k < array.size(); k++) {
            try {
                runs.add(run(array.get(k)));
            } catch (IllegalArgumentException e) {
                throw new BadInputException(file, "run " + k + ": " + e.getMessage());
            }
        }
        return runs;
    }

    private static Run run(Object value) {
        if (!(value instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("not an object");
        }
        double rep = number(m, "rep");
        if (rep != Math.rint(rep)) {
            throw new IllegalArgumentException("\"rep\" is not a whole number: " + rep);
        }
        double step = number(m, "simulated_step_ms");
        double wall = number(m, "wall_s");
        double bound = number(m, "bound_s");
        if (step < 0 || wall < 0 || bound < 0) {
            throw new IllegalArgumentException(
                    "negative \"simulated_step_ms\", \"wall_s\" or \"bound_s\"");
        }
        return new Run(
                text(m, "loader"),
                step,
                (int) rep,
                wall,
                number(m, "accelerator.busy_fraction"),
                bound,
                (long) number(m, "samples.slow"),
                (long) number(m, "samples.delivered"),
                new Timings(
                        optional(m, "first_epoch.wall_s"),
                        optional(m, "later_epochs.samples_per_s"),
                        optional(m, "start_s"),
                        optional(m, "stall.head_of_line_s"),
                        optional(m, "stall.behind_s"),
                        optional(m, "stall.fetch_s")));
    }

    /** A number that reports may lack or hold as null: NaN then. */
    private static double optional(Map<?, ?> m, String path) {
        Object v = find(m, path);
        return v == MISSING || v == null ? Double.NaN : number(m, path);
    }

    /** What {@link #find} returns for a path that is not there. */
    private static final Object MISSING = new Object();

    /** The value at a dotted path of keys through nested objects; {@link #MISSING} if absent. */
    private static Object find(Map<?, ?> m, String path) {
        Object v = m;
        for (String key : path.split("\\.")) {
            if (!(v instanceof Map<?, ?> o) || !o.containsKey(key)) {
                return MISSING;
            }
            v = o.get(key);
        }
        return v;
    }

    /** The value at a dotted path, which must be there (JSON null counts as there). */
    private static Object at(Map<?, ?> m, String path) {
        Object v = find(m, path);
        if (v == MISSING) {
            throw new IllegalArgumentException("\"" + path + "\" is missing");
        }
        return v;
    }

    private static double number(Map<?, ?> m, String path) {
        if (!(at(m, path) instanceof Double d)) {
            throw new IllegalArgumentException("\"" + path + "\" is not a number");
        }
        return d;
    }

    private static String text(Map<?, ?> m, String path) {
        if (!(at(m, path) instanceof String s)) {
            throw new IllegalArgumentException("\"" + path + "\" is not a string");
        }
        return s;
    }

    /** The median of the values that are numbers; NaN when none is. */
    private static <T> double median(List<T> items, ToDoubleFunction<T> f) {
        double[] v = items.stream().mapToDouble(f).filter(x -> !Double.isNaN(x)).sorted().toArray();
        int n = v.length;
        if (n == 0) {
            return Double.NaN;
        }
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    public List<String> loaders() {
        return loaders;
    }

    public List<Row> rows() {
        return List.copyOf(rows);
    }

    /** Loader {@code index}'s colour in the plots. */
    static Color colour(int index) {
        if (index < PALETTE.length) {
            return new Color(PALETTE[index]);
        }
        return Color.getHSBColor((float) ((index * 0.618034) % 1.0), 0.75f, 0.8f);
    }

    /** The table of medians {@code scripts/bench} prints. */
    public String table() {
        StringBuilder b = new StringBuilder();
        b.append("medians of ").append(runCount()).append(" run(s)\n");
        b.append(
                String.format(
                        Locale.ROOT,
                        "%7s %8s %8s %12s %7s %7s %8s %10s %9s %8s %8s %6s %8s %7s%n",
                        "step ms",
                        "loader",
                        "wall s",
                        "(min-max)",
                        "busy %",
                        "slow %",
                        "bound s",
                        "wall/bound",
                        "1st ep s",
                        "later/s",
                        "start s",
                        "HoL s",
                        "behind s",
                        "fetch s"));
        for (Row r : rows) {
            b.append(
                    String.format(
                            Locale.ROOT,
                            "%7.0f %8s %8.2f %12s %7.1f %7.1f %8.2f %10.2f %9s %8s %8s %6s %8s %7s%n",
                            r.stepMs(),
                            r.loader(),
                            r.wallS(),
                            String.format(Locale.ROOT, "%.2f-%.2f", r.wallMin(), r.wallMax()),
                            r.busyPercent(),
                            r.slowPercent(),
                            r.boundS(),
                            r.wallOverBound(),
                            orDash(r.timings().firstEpochS(), "%.2f"),
                            orDash(r.timings().laterSamplesPerS(), "%.1f"),
                            orDash(r.timings().startS(), "%.2f"),
                            orDash(r.timings().headOfLineS(), "%.2f"),
                            orDash(r.timings().behindS(), "%.2f"),
                            orDash(r.timings().fetchS(), "%.2f")));
        }
        return b.toString();
    }

    private static String orDash(double value, String format) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, format, value);
    }

    /** Runs per row: "3", or "2-3" when some rows have fewer. */
    private String runCount() {
        int fewest = rows.stream().mapToInt(Row::runs).min().orElseThrow();
        int most = rows.stream().mapToInt(Row::runs).max().orElseThrow();
        return fewest == most ? "" + most : fewest + "-" + most;
    }

    /**
     * Adds one series per loader of a row's value, named after the loader, in its colour, with a
     * marker at each step time; with {@code low} and {@code high}, also a whisker series per loader
     * ({@link #WHISKERS} after its name, not in the legend): a vertical line from {@code low} to
     * {@code high} at each step time, capped at both ends, a gap (NaN) between steps. Whiskers of
     * different loaders at one step stand {@link #DODGE} of the step axis's span apart, so none
     * hides another.
     */
    private void perLoader(
            XYChart chart,
            ToDoubleFunction<Row> y,
            ToDoubleFunction<Row> low,
            ToDoubleFunction<Row> high) {
        double span = steps[steps.length - 1] - steps[0];
        double dodge = DODGE * (span > 0 ? span : 1);
        for (int l = 0; l < loaders.size(); l++) {
            String loader = loaders.get(l);
            List<Row> mine = rows.stream().filter(r -> r.loader().equals(loader)).toList();
            XYSeries line = chart.addSeries(loader, values(mine, Row::stepMs), values(mine, y));
            line.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
            line.setMarker(SeriesMarkers.CIRCLE);
            line.setLineColor(colour(l));
            line.setMarkerColor(colour(l));
            line.setLineStyle(LINE);
            if (low == null) {
                continue;
            }
            double shift = (l - (loaders.size() - 1) / 2.0) * dodge;
            double[] x = new double[3 * mine.size()];
            double[] ends = new double[3 * mine.size()];
            for (int k = 0; k < mine.size(); k++) {
                Row r = mine.get(k);
                x[3 * k] = x[3 * k + 1] = x[3 * k + 2] = r.stepMs() + shift;
                ends[3 * k] = low.applyAsDouble(r);
                ends[3 * k + 1] = high.applyAsDouble(r);
                ends[3 * k + 2] = Double.NaN;
            }
            // Error bars of 0 at both ends draw the whiskers' caps.
            XYSeries whiskers =
                    chart.addSeries(loader + WHISKERS, x, ends, new double[ends.length]);
            whiskers.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
            whiskers.setMarker(SeriesMarkers.NONE);
            whiskers.setLineColor(colour(l));
            whiskers.setLineStyle(WHISKER);
            whiskers.setShowInLegend(false);
        }
    }

    private static double[] values(List<Row> rows, ToDoubleFunction<Row> f) {
        return rows.stream().mapToDouble(f).toArray();
    }

    /** A chart of one value per loader against the step time; {@code note} ends the title. */
    private XYChart chart(String title, String note, String yAxisTitle) {
        XYChart chart =
                ChartFiles.lineChart(
                        WIDTH,
                        HEIGHT,
                        title + " (median of " + runCount() + " run(s) per point" + note + ")",
                        "simulated accelerator step (ms)",
                        yAxisTitle);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        chart.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
        chart.getStyler().setErrorBarsColorSeriesColor(true);
        chart.getStyler().setMarkerSize(9);
        return chart;
    }

    /**
     * Median wall time per loader and step time, min-max whiskers, and the median bound dashed
     * ({@link #BOUND}).
     */
    XYChart wallChart() {
        XYChart chart =
                chart(
                        "Wall time against simulated accelerator step",
                        ", whiskers min-max",
                        "wall time (s)");
        perLoader(chart, Row::wallS, Row::wallMin, Row::wallMax);
        XYSeries bound = chart.addSeries(BOUND, steps.clone(), boundPerStep.clone());
        bound.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        bound.setMarker(SeriesMarkers.NONE);
        bound.setLineColor(BOUND_COLOUR);
        bound.setLineStyle(DASHED);
        return chart;
    }

    /**
     * Median accelerator busy % per loader and step time (busy: time in training steps / (devices x
     * wall time)), on an axis to 100.
     */
    XYChart busyChart() {
        XYChart chart =
                chart(
                        "Accelerator busy against simulated accelerator step",
                        "",
                        "accelerator busy (%)");
        chart.getStyler().setYAxisMax(100.0);
        perLoader(chart, Row::busyPercent, null, null);
        return chart;
    }

    /**
     * Writes {@link #FILES} into {@code dir} (created if missing); returns their paths. Text needs
     * a font: without one (no fontconfig fonts) this fails with an IOException saying what to
     * install.
     */
    public List<Path> write(Path dir) throws IOException {
        Files.createDirectories(dir);
        List<Path> written = new ArrayList<>();
        XYChart[] charts = {wallChart(), busyChart()};
        for (int k = 0; k < charts.length; k++) {
            written.add(ChartFiles.save(charts[k], dir.resolve(FILES.get(k))));
        }
        return written;
    }
}
