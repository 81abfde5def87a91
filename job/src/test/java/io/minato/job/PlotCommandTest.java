package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.report.BenchFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PlotCommandTest {
    @TempDir Path dir;

    @Test
    void shouldPrintTheTableAndWriteThePlotsNextToBenchJson() throws Exception {
        Path bench = Files.writeString(dir.resolve("bench.json"), BenchFixture.json());
        var run = MainTest.run("plot", "--bench", bench.toString());
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.out())
                .startsWith("medians of 2 run(s)\nstep ms   loader   wall s")
                .contains("    100   minato     8.50    8.00-9.00    85.0")
                .contains("plots: " + dir.resolve("wall.png") + " " + dir.resolve("busy.png"));
        assertThat(ImageIO.read(dir.resolve("wall.png").toFile()).getWidth()).isEqualTo(960);
        assertThat(ImageIO.read(dir.resolve("busy.png").toFile()).getWidth()).isEqualTo(960);
    }

    @Test
    void shouldWriteThePlotsIntoOutWhenGiven() throws Exception {
        Path bench = Files.writeString(dir.resolve("bench.json"), BenchFixture.json());
        var run = MainTest.run("plot", "--bench", bench.toString(), "--out", dir + "/figs");
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(dir.resolve("figs/wall.png")).isRegularFile();
        assertThat(dir.resolve("figs/busy.png")).isRegularFile();
        assertThat(dir.resolve("wall.png")).doesNotExist();
    }

    @Test
    void shouldRefuseAMissingBenchJsonInOneLineWithStatus3() {
        Path missing = dir.resolve("nowhere/bench.json");
        var run = MainTest.run("plot", "--bench", missing.toString());
        assertThat(run.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err().strip())
                .isEqualTo("error: " + missing + ": no such file (scripts/bench writes it)");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void shouldRefuseAMalformedBenchJsonInOneLineSayingWhere() throws Exception {
        String json = BenchFixture.json();
        Path cut =
                Files.writeString(dir.resolve("bench.json"), json.substring(0, json.length() / 2));
        var run = MainTest.run("plot", "--bench", cut.toString());
        assertThat(run.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err().strip())
                .doesNotContain("\n")
                .startsWith("error: " + cut + ": malformed JSON: ")
                .containsPattern("at line \\d+, column \\d+$");
        assertThat(dir.resolve("wall.png")).doesNotExist();
    }

    @Test
    void shouldRefuseAMalformedSoakCsvInOneLineWithStatus3() throws Exception {
        Path csv = Files.writeString(dir.resolve("soak.csv"), "seconds,rss_mb\n0,500\n");
        var run = MainTest.run("plot", "--soak", csv.toString());
        assertThat(run.status()).isEqualTo(Main.EXIT_BAD_INPUT);
        assertThat(run.err().strip())
                .isEqualTo("error: " + csv + ": no column anon_mb in its header");
        assertThat(dir.resolve("soak.png")).doesNotExist();
    }

    @Test
    void shouldAskForBenchInOneLine() {
        var run = MainTest.run("plot");
        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err().strip()).doesNotContain("\n").contains("--bench");
    }
}
