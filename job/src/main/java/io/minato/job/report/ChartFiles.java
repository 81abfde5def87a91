package io.minato.job.report;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.BitmapEncoder.BitmapFormat;
import org.knowm.xchart.internal.chartpart.Chart;

/**
 * Writing an XChart plot as PNG, where a machine without fonts gets one line saying what to install
 * instead of Java 2D's stack trace (the last line printed).
 */
final class ChartFiles {
    static {
        // Plots are written, never shown: no display is needed or opened.
        System.setProperty("java.awt.headless", "true");
    }

    private ChartFiles() {}

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
