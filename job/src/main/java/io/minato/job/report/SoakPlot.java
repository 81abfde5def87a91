package io.minato.job.report;

import io.minato.data.BadInputException;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The memory curve of a soak ({@code scripts/soak}'s soak.csv): resident memory, its anonymous part
 * (heap, native buffers: what a leak would grow) and the Java heap, in MB against minutes. Drawn
 * with XChart.
 */
public final class SoakPlot {
    /** The plot {@link #write} makes. */
    public static final String FILE = "soak.png";

    static final int WIDTH = 960;
    static final int HEIGHT = 600;

    private static final BasicStroke LINE =
            new BasicStroke(2.5f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND);

    /** The columns drawn, as scripts/soak names them, with their legend names and colours. */
    private static final String[][] COLUMNS = {
        {"rss_mb", "resident (RSS)", "1f77b4"},
        {"anon_mb", "anonymous", "d62728"},
        {"heap_committed_mb", "heap committed", "2ca02c"},
        {"heap_used_mb", "heap used", "9467bd"},
    };

    private final double[] minutes;
    private final List<double[]> columns = new ArrayList<>();

    private SoakPlot(double[] minutes, List<double[]> columns) {
        this.minutes = minutes;
        this.columns.addAll(columns);
    }

    /**
     * Reads soak.csv.
     *
     * @throws BadInputException one line naming the file (and the line that is not a reading)
     */
    public static SoakPlot read(Path csv) throws BadInputException {
        List<String> lines = ChartFiles.readInput(csv, "scripts/soak").lines().toList();
        if (lines.isEmpty()) {
            throw new BadInputException(csv, "empty, not a soak.csv");
        }
        List<String> header = Arrays.asList(lines.get(0).split(",", -1));
        int[] at = new int[COLUMNS.length];
        for (int c = 0; c < COLUMNS.length; c++) {
            at[c] = header.indexOf(COLUMNS[c][0]);
            if (at[c] < 0) {
                throw new BadInputException(csv, "no column " + COLUMNS[c][0] + " in its header");
            }
        }
        int seconds = header.indexOf("seconds");
        if (seconds < 0) {
            throw new BadInputException(csv, "no column seconds in its header");
        }
        int n = lines.size() - 1;
        double[] minutes = new double[n];
        List<double[]> columns = new ArrayList<>();
        for (int c = 0; c < COLUMNS.length; c++) {
            columns.add(new double[n]);
        }
        for (int k = 0; k < n; k++) {
            String[] f = lines.get(k + 1).split(",", -1);
            try {
                minutes[k] = Double.parseDouble(f[seconds]) / 60;
                for (int c = 0; c < COLUMNS.length; c++) {
                    columns.get(c)[k] =
                            f[at[c]].isEmpty() ? Double.NaN : Double.parseDouble(f[at[c]]);
                }
            } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
                throw new BadInputException(
                        csv, "line " + (k + 2) + " is not a reading: " + lines.get(k + 1));
            }
        }
        return new SoakPlot(minutes, columns);
    }

    /**
     * The columns with a value in every reading against minutes, named as in {@link #COLUMNS} (one
     * without, from a soak without jcmd, is left out: the line would lie).
     */
    XYChart chart() {
        XYChart chart =
                ChartFiles.lineChart(
                        WIDTH,
                        HEIGHT,
                        "Memory of a long run (one reading every "
                                + (minutes.length > 1
                                        ? Math.round((minutes[1] - minutes[0]) * 60) + " s"
                                        : "run")
                                + "; anonymous memory is what a leak would grow)",
                        "minutes",
                        "MB");
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        chart.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
        chart.getStyler().setMarkerSize(6);
        for (int c = 0; c < COLUMNS.length; c++) {
            double[] y = columns.get(c);
            if (Arrays.stream(y).anyMatch(Double::isNaN)) {
                continue;
            }
            XYSeries s = chart.addSeries(COLUMNS[c][1], minutes.clone(), y.clone());
            s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
            s.setMarker(SeriesMarkers.CIRCLE);
            Color colour = new Color(Integer.parseInt(COLUMNS[c][2], 16));
            s.setLineColor(colour);
            s.setMarkerColor(colour);
            s.setLineStyle(LINE);
        }
        return chart;
    }

    /**
     * Writes soak.png into {@code dir} (created if missing); returns its path. Text needs a font:
     * without one this fails with an IOException saying what to install.
     */
    public Path write(Path dir) throws IOException {
        return ChartFiles.save(chart(), dir.resolve(FILE));
    }
}
