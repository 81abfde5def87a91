package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The memory curve of a scripts/soak run, drawn from its soak.csv. */
class SoakPlotTest {
    private static final String HEADER =
            "seconds,rss_mb,anon_mb,file_mb,shmem_mb,heap_used_mb,heap_committed_mb,threads,"
                    + "open_files,run_dir_mb\n";

    @TempDir Path dir;

    @Test
    void shouldDrawTheReadingsOfASoak() throws IOException {
        Path csv = dir.resolve("soak.csv");
        Files.writeString(
                csv,
                HEADER
                        + "0,500,440,43,23,99.1,468,95,100,50\n"
                        + "60,650,590,43,24,120.5,468,97,101,50\n"
                        + "120,655,592,43,24,80.0,468,97,99,51\n");

        Path png = SoakPlot.read(csv).write(dir.resolve("out"));

        assertThat(png).isEqualTo(dir.resolve("out").resolve("soak.png"));
        assertThat(ImageIO.read(png.toFile()).getWidth()).isEqualTo(LineChart.WIDTH);
        // Two minutes on the x axis, RSS 655 MB the highest reading on the y axis.
        LineChart chart = SoakPlot.read(csv).chart();
        assertThat(chart.xMax()).isEqualTo(2.0);
        assertThat(chart.yMax()).isGreaterThanOrEqualTo(655).isLessThan(1000);
    }

    @Test
    void shouldNameTheFileAndLineOfAReadingThatIsNone() throws IOException {
        Path csv = dir.resolve("soak.csv");
        Files.writeString(csv, HEADER + "0,500,440,43,23,99.1,468,95,100,50\n60,lots,590\n");
        assertThatThrownBy(() -> SoakPlot.read(csv))
                .isInstanceOf(IOException.class)
                .hasMessage(csv + " line 3: not a reading: 60,lots,590");

        Files.writeString(csv, "seconds,rss_mb\n0,500\n");
        assertThatThrownBy(() -> SoakPlot.read(csv))
                .hasMessage(csv + ": no column anon_mb in its header");
    }
}
