package io.minato.job.report;

import io.minato.data.BadInputException;
import java.awt.Color;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Locale;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.BitmapEncoder.BitmapFormat;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.internal.chartpart.Chart;

/**
 * What the XChart plots share ({@link RunPlots}, {@link BenchPlots}, {@link SoakPlot}): a line
 * chart on white with both axes from 0, and writing a chart as PNG, where a machine without fonts
 * gets one line saying what to install instead of Java 2D's stack trace.
 */
final class ChartFiles {
    static {
        // Plots are written, never shown: no display is needed or opened.
        System.setProperty("java.awt.headless", "true");
    }

    private ChartFiles() {}

    /** A line chart of {@code width} x {@code height} pixels whose axes start at 0. */
    static XYChart lineChart(
            int width, int height, String title, String xAxisTitle, String yAxisTitle) {
        XYChart chart =
                new XYChartBuilder()
                        .width(width)
                        .height(height)
                        .title(title)
                        .xAxisTitle(xAxisTitle)
                        .yAxisTitle(yAxisTitle)
                        .build();
        chart.getStyler().setXAxisMin(0.0);
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        return chart;
    }

    /**
     * Writes {@code chart} as PNG to {@code file} (its folder created if missing); returns {@code
     * file}. Text needs a font: without one this fails with the IOException of {@link #noFonts}.
     */
    static Path save(Chart<?, ?> chart, Path file) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        try (OutputStream out = Files.newOutputStream(file)) {
            BitmapEncoder.saveBitmap(chart, out, BitmapFormat.PNG);
        } catch (Error | RuntimeException e) {
            IOException fonts = noFonts(e);
            if (fonts != null) {
                throw fonts;
            }
            throw e;
        }
        return file;
    }

    /**
     * If {@code e} is how Java 2D fails on a machine without fonts ("No physical fonts found", or
     * "Fontconfig head is null" inside an InternalError, depending on what is missing), the
     * one-line IOException that says what to install (with {@code e} suppressed, not its cause: the
     * last line printed is this one); else null.
     */
    /**
     * The text of a plot's input ({@code bench.json}, {@code soak.csv}); a missing, unreadable or
     * non-UTF-8 file gets one line naming it and, when missing, what writes it.
     */
    static String readInput(Path file, String writtenBy) throws BadInputException {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new BadInputException(file, "no such file (" + writtenBy + " writes it)");
        } catch (CharacterCodingException e) {
            throw new BadInputException(file, "not UTF-8 text");
        } catch (IOException e) {
            throw new BadInputException(file, "cannot read it: " + e.getMessage());
        }
    }

    static IOException noFonts(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String m = t.getMessage();
            if (m != null && m.toLowerCase(Locale.ROOT).contains("font")) {
                IOException io =
                        new IOException(
                                "Java 2D found no fonts for the plots' text; install"
                                        + " fontconfig and a font (Debian: apt-get install"
                                        + " fontconfig fonts-dejavu-core)");
                io.addSuppressed(e);
                return io;
            }
        }
        return null;
    }
}
