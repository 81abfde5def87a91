package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class ChartFilesTest {
    @Test
    void shouldSayWhatToInstallWhenJava2dFindsNoFonts() {
        // As the JDK fails without fontconfig's fonts: deep in an InternalError.
        Throwable noFonts =
                new RuntimeException(
                        "while painting", new InternalError("Fontconfig head is null"));
        IOException io = ChartFiles.noFonts(noFonts);
        assertThat(io)
                .hasMessage(
                        "Java 2D found no fonts for the plots' text; install fontconfig and a font"
                                + " (Debian: apt-get install fontconfig fonts-dejavu-core)")
                .hasNoCause();
        assertThat(io.getSuppressed()).containsExactly(noFonts);
        assertThat(ChartFiles.noFonts(new Error("No physical fonts found"))).isNotNull();
    }

    @Test
    void shouldLeaveOtherFailuresAlone() {
        assertThat(ChartFiles.noFonts(new IllegalStateException("no data"))).isNull();
        assertThat(ChartFiles.noFonts(new RuntimeException((String) null))).isNull();
    }
}
