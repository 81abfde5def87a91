package io.minato.job.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.Rectangle;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Line2D;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.util.List;
import java.util.Locale;

/**
 * A line chart drawn with Java 2D into an image, no display needed: both axes from 0 to a round
 * number, ticks, a light grid, one line with round markers per series (optionally whiskers from low
 * to high at each point, or dashed with open markers), a legend right of the plot.
 */
final class LineChart {
    static final int WIDTH = 960;
    static final int HEIGHT = 600;

    /** The plot's frame; the data sit {@link #PAD} pixels inside it, so no marker is cut. */
    static final Rectangle FRAME = new Rectangle(90, 70, 620, 440);

    static final int PAD = 12;

    private static final Color INK = new Color(0x22, 0x22, 0x22);
    private static final Color MUTED = new Color(0x66, 0x66, 0x66);
    private static final Color GRID = new Color(0xe4, 0xe4, 0xe4);

    /**
     * One line: points (x[k], y[k]) in increasing x; {@code low}/{@code high} are the whiskers'
     * ends, or null for none.
     */
    record Series(
            String name,
            Color colour,
            double[] x,
            double[] y,
            double[] low,
            double[] high,
            boolean dashed) {}

    private final String title;
    private final String subtitle;
    private final String xLabel;
    private final String yLabel;
    private final List<Series> series;
    private final double xMax;
    private final double xStep;
    private final double yMax;
    private final double yStep;

    /**
     * @param yAtLeast the y axis reaches at least this far (100 for a percentage)
     */
    LineChart(
            String title,
            String subtitle,
            String xLabel,
            String yLabel,
            List<Series> series,
            double yAtLeast) {
        this.title = title;
        this.subtitle = subtitle;
        this.xLabel = xLabel;
        this.yLabel = yLabel;
        this.series = List.copyOf(series);
        double xm = 0;
        double ym = yAtLeast;
        for (Series s : series) {
            for (int k = 0; k < s.x().length; k++) {
                xm = Math.max(xm, s.x()[k]);
                ym = Math.max(ym, s.high() == null ? s.y()[k] : Math.max(s.y()[k], s.high()[k]));
            }
        }
        double[] xa = axis(xm);
        double[] ya = axis(ym);
        xMax = xa[0];
        xStep = xa[1];
        yMax = ya[0];
        yStep = ya[1];
    }

    /** An axis from 0: {end, tick step}, the end a round number at or above {@code max}. */
    static double[] axis(double max) {
        if (!(max > 0) || Double.isInfinite(max)) {
            return new double[] {1, 0.2};
        }
        double magnitude = Math.pow(10, Math.floor(Math.log10(max / 5)));
        for (double f : new double[] {1, 2, 5, 10}) {
            double step = f * magnitude;
            double ticks = Math.ceil(max / step - 1e-9);
            if (ticks <= 8) {
                return new double[] {ticks * step, step};
            }
        }
        throw new AssertionError("max / (10 x magnitude) < 5 always: " + max);
    }

    double xMax() {
        return xMax;
    }

    double yMax() {
        return yMax;
    }

    /** The pixel column of {@code x}. */
    double px(double x) {
        return FRAME.x + PAD + x / xMax * (FRAME.width - 2 * PAD);
    }

    /** The pixel row of {@code y}. */
    double py(double y) {
        return FRAME.y + FRAME.height - PAD - y / yMax * (FRAME.height - 2 * PAD);
    }

    BufferedImage render() {
        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(
                    RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_RENDERING, RenderingHints.VALUE_RENDER_QUALITY);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, WIDTH, HEIGHT);
            drawTitles(g);
            drawAxes(g);
            // Lines under whiskers under markers, so no series' line hides another's points.
            for (Series s : series) {
                drawLine(g, s);
            }
            int whiskered = 0;
            for (Series s : series) {
                whiskered += s.low() == null ? 0 : 1;
            }
            int w = 0;
            for (Series s : series) {
                if (s.low() != null) {
                    // Whiskers of different series at one x stand a little apart.
                    drawWhiskers(g, s, (w++ - (whiskered - 1) / 2.0) * 5);
                }
            }
            for (Series s : series) {
                for (int k = 0; k < s.x().length; k++) {
                    marker(g, s, px(s.x()[k]), py(s.y()[k]));
                }
            }
            drawLegend(g);
        } finally {
            g.dispose();
        }
        return image;
    }

    private void drawTitles(Graphics2D g) {
        g.setColor(INK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
        centre(g, title, WIDTH / 2.0, 30);
        g.setColor(MUTED);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        centre(g, subtitle, WIDTH / 2.0, 52);
    }

    private void drawAxes(Graphics2D g) {
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        FontMetrics fm = g.getFontMetrics();
        int bottom = FRAME.y + FRAME.height;
        g.setStroke(new BasicStroke(1f));
        for (int k = 0; k * yStep <= yMax * (1 + 1e-9); k++) {
            double v = k * yStep;
            double y = py(v);
            g.setColor(GRID);
            g.draw(new Line2D.Double(FRAME.x + 1, y, FRAME.x + FRAME.width - 1, y));
            g.setColor(INK);
            g.draw(new Line2D.Double(FRAME.x - 5, y, FRAME.x, y));
            String label = tick(v, yStep);
            g.drawString(
                    label,
                    (float) (FRAME.x - 8 - fm.stringWidth(label)),
                    (float) (y + fm.getAscent() / 2.0 - 1));
        }
        for (int k = 0; k * xStep <= xMax * (1 + 1e-9); k++) {
            double v = k * xStep;
            double x = px(v);
            g.setColor(GRID);
            g.draw(new Line2D.Double(x, FRAME.y + 1, x, bottom - 1));
            g.setColor(INK);
            g.draw(new Line2D.Double(x, bottom, x, bottom + 5));
            centre(g, tick(v, xStep), x, bottom + 8 + fm.getAscent());
        }
        g.setColor(INK);
        g.draw(FRAME);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 14));
        centre(g, xLabel, FRAME.getCenterX(), bottom + 48);
        Graphics2D r = (Graphics2D) g.create();
        try {
            r.translate(FRAME.x - 58, FRAME.getCenterY());
            r.rotate(-Math.PI / 2);
            centre(r, yLabel, 0, 0);
        } finally {
            r.dispose();
        }
    }

    private void drawLine(Graphics2D g, Series s) {
        Path2D.Double line = new Path2D.Double();
        for (int k = 0; k < s.x().length; k++) {
            if (k == 0) {
                line.moveTo(px(s.x()[k]), py(s.y()[k]));
            } else {
                line.lineTo(px(s.x()[k]), py(s.y()[k]));
            }
        }
        g.setColor(s.colour());
        g.setStroke(lineStroke(s));
        g.draw(line);
    }

    private void drawWhiskers(Graphics2D g, Series s, double dodge) {
        g.setColor(s.colour());
        g.setStroke(new BasicStroke(1.5f));
        for (int k = 0; k < s.x().length; k++) {
            double x = px(s.x()[k]) + dodge;
            double lo = py(s.low()[k]);
            double hi = py(s.high()[k]);
            g.draw(new Line2D.Double(x, lo, x, hi));
            g.draw(new Line2D.Double(x - 4, lo, x + 4, lo));
            g.draw(new Line2D.Double(x - 4, hi, x + 4, hi));
        }
    }

    private static Stroke lineStroke(Series s) {
        return s.dashed()
                ? new BasicStroke(
                        2f,
                        BasicStroke.CAP_BUTT,
                        BasicStroke.JOIN_ROUND,
                        10f,
                        new float[] {9f, 6f},
                        0f)
                : new BasicStroke(2.5f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND);
    }

    private static void marker(Graphics2D g, Series s, double x, double y) {
        g.setColor(s.colour());
        if (s.dashed()) {
            g.setStroke(new BasicStroke(1.5f));
            g.draw(new Ellipse2D.Double(x - 3.5, y - 3.5, 7, 7));
        } else {
            g.fill(new Ellipse2D.Double(x - 4.5, y - 4.5, 9, 9));
        }
    }

    private void drawLegend(Graphics2D g) {
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        FontMetrics fm = g.getFontMetrics();
        int x = FRAME.x + FRAME.width + 24;
        int y = FRAME.y + 14;
        for (Series s : series) {
            g.setColor(s.colour());
            g.setStroke(lineStroke(s));
            g.draw(new Line2D.Double(x, y, x + 30, y));
            marker(g, s, x + 15, y);
            g.setColor(INK);
            g.drawString(s.name(), x + 40, y + fm.getAscent() / 2f - 1);
            y += 24;
        }
    }

    private static void centre(Graphics2D g, String text, double x, double baseline) {
        g.drawString(
                text, (float) (x - g.getFontMetrics().stringWidth(text) / 2.0), (float) baseline);
    }

    /** A tick's label with as many decimals as the step needs: 0, 0.5, 2.5, 0.25. */
    static String tick(double v, double step) {
        int decimals = 0;
        while (decimals < 6) {
            double scaled = step * Math.pow(10, decimals);
            if (Math.abs(scaled - Math.rint(scaled)) < 1e-6 * Math.max(1, scaled)) {
                break;
            }
            decimals++;
        }
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
