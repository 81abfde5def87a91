package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.knowm.xchart.XYChart;

/** The memory curve of a scripts/soak run, drawn from its soak.csv. */
class SoakPlotTest {
    private static final String HEADER =
            "seconds,rss_mb,anon_mb,file_mb,shmem_mb,heap_used_mb,heap_committed_mb,threads,"
                    + "open_files,run_dir_mb\n";

    @TempDir Path dir;

    @Test
    void shouldDrawTheReadingsOfASoak() throws Exception {
        Path csv = dir.resolve("soak.csv");
        Files.writeString(
                csv,
                HEADER
                        + "0,500,440,43,23,99.1,468,95,100,50\n"
                        + "60,650,590,43,24,120.5,468,97,101,50\n"
                        + "120,655,592,43,24,80.0,470,97,99,51\n");

        Path png = SoakPlot.read(csv).write(dir.resolve("out"));

        assertThat(png).isEqualTo(dir.resolve("out").resolve(SoakPlot.FILE));
        assertThat(SoakPlot.FILE).isEqualTo("soak.png");
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(SoakPlot.WIDTH);
        assertThat(image.getHeight()).isEqualTo(SoakPlot.HEIGHT);
        // Each column against minutes, in the order and with the names of the legend.
        XYChart chart = SoakPlot.read(csv).chart();
        assertThat(chart.getTitle())
                .isEqualTo(
                        "Memory of a long run (one reading every 60 s; anonymous memory is what a"
                                + " leak would grow)");
        assertThat(chart.getXAxisTitle()).isEqualTo("minutes");
        assertThat(chart.getYAxisTitle()).isEqualTo("MB");
        assertThat(chart.getSeriesMap().keySet())
                .containsExactly("resident (RSS)", "anonymous", "heap committed", "heap used");
        for (var series : chart.getSeriesMap().values()) {
            assertThat(series.getXData()).as(series.getName()).containsExactly(0, 1, 2);
        }
        assertThat(chart.getSeriesMap().get("resident (RSS)").getYData())
                .containsExactly(500, 650, 655);
        assertThat(chart.getSeriesMap().get("anonymous").getYData()).containsExactly(440, 590, 592);
        assertThat(chart.getSeriesMap().get("heap committed").getYData())
                .containsExactly(468, 468, 470);
        assertThat(chart.getSeriesMap().get("heap used").getYData())
                .containsExactly(99.1, 120.5, 80.0);
        assertThat(chart.getStyler().getYAxisMin()).isZero();
    }

    @Test
    void shouldLeaveOutAColumnMissingFromAReading() throws Exception {
        // No jcmd: the heap columns are empty.
        Path csv = dir.resolve("soak.csv");
        Files.writeString(
                csv, HEADER + "0,500,440,43,23,,,95,100,50\n" + "30,650,590,43,24,99,,97,101,50\n");
        XYChart chart = SoakPlot.read(csv).chart();
        assertThat(chart.getSeriesMap().keySet()).containsExactly("resident (RSS)", "anonymous");
        assertThat(chart.getSeriesMap().get("anonymous").getXData()).containsExactly(0, 0.5);
        assertThat(chart.getTitle()).contains("one reading every 30 s");
        assertThat(SoakPlot.read(csv).write(dir)).isRegularFile();
    }

    @Test
    void shouldNameTheFileAndLineOfAReadingThatIsNone() throws Exception {
        Path csv = dir.resolve("soak.csv");
        Files.writeString(csv, HEADER + "0,500,440,43,23,99.1,468,95,100,50\n60,lots,590\n");
        assertThatThrownBy(() -> SoakPlot.read(csv))
                .isInstanceOf(BadInputException.class)
                .hasMessage(csv + ": line 3 is not a reading: 60,lots,590");

        Files.writeString(csv, "seconds,rss_mb\n0,500\n");
        assertThatThrownBy(() -> SoakPlot.read(csv))
                .hasMessage(csv + ": no column anon_mb in its header");

        Files.writeString(csv, "");
        assertThatThrownBy(() -> SoakPlot.read(csv)).hasMessage(csv + ": empty, not a soak.csv");

        Files.write(csv, new byte[] {(byte) 0xff, (byte) 0xfe, 's'});
        assertThatThrownBy(() -> SoakPlot.read(csv)).hasMessage(csv + ": not UTF-8 text");

        Path missing = dir.resolve("none.csv");
        assertThatThrownBy(() -> SoakPlot.read(missing))
                .isInstanceOf(BadInputException.class)
                .hasMessage(missing + ": no such file (scripts/soak writes it)");
    }
}
