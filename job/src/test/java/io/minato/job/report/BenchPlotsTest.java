package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import io.minato.data.BadInputException;
import java.awt.Color;
import java.awt.Rectangle;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;

/**
 * The table and plots of a small synthetic bench.json ({@link BenchFixture}): the PNGs read back,
 * and the charts' series against the medians the fixture makes.
 */
class BenchPlotsTest {
    /** The whole image. */
    private static final Rectangle ALL = new Rectangle(0, 0, BenchPlots.WIDTH, BenchPlots.HEIGHT);

    @TempDir static Path dir;
    static BenchPlots plots;
    static BufferedImage wall;
    static BufferedImage busy;

    @BeforeAll
    static void render() throws Exception {
        Path bench = Files.writeString(dir.resolve("bench.json"), BenchFixture.json());
        plots = new BenchPlots(BenchPlots.read(bench));
        List<Path> written = plots.write(dir.resolve("plots"));
        assertThat(written)
                .containsExactly(dir.resolve("plots/wall.png"), dir.resolve("plots/busy.png"));
        wall = ImageIO.read(written.get(0).toFile());
        busy = ImageIO.read(written.get(1).toFile());
    }

    @Test
    void shouldTakeLoadersAndStepsFromTheDataAndPrintMediansAsBenchDid() {
        assertThat(plots.loaders()).containsExactly("minato", "inorder");
        assertThat(plots.table())
                .isEqualTo(
                        """
                        medians of 2 run(s)
                        step ms   loader   wall s    (min-max)  busy %  slow %  bound s wall/bound  1st ep s  later/s  start s  HoL s behind s fetch s
                              0   minato     2.50    2.00-3.00     6.0    10.0     1.00       2.50      1.25     25.0     4.00   0.00     0.50    0.15
                              0  inorder     6.50    6.00-7.00    10.0     0.0     1.00       6.50      3.25      9.3     4.00   0.30     0.20    0.15
                            100   minato     8.50    8.00-9.00    85.0    10.0     3.00       2.83      4.00      7.5     3.50   0.00     0.50    0.10
                            100  inorder     4.50    4.00-5.00    50.0     0.0     3.00       1.50      2.00     15.0     3.50   0.20     0.30    0.10
                        """);
    }

    @Test
    void shouldWriteTwoPngsOfTheChartSizeWithTitleAndEachLoadersLine() {
        for (BufferedImage image : List.of(wall, busy)) {
            assertThat(image.getWidth()).isEqualTo(BenchPlots.WIDTH);
            assertThat(image.getHeight()).isEqualTo(BenchPlots.HEIGHT);
            // The title: dark pixels in the band at the top, so fonts rendered.
            assertThat(count(image, new Rectangle(0, 0, BenchPlots.WIDTH, 30), Color.BLACK, 80))
                    .isGreaterThan(100);
            for (int l = 0; l < 2; l++) {
                assertThat(count(image, ALL, BenchPlots.colour(l), 30))
                        .as("loader %d", l)
                        .isGreaterThan(500);
            }
        }
        assertThat(count(wall, ALL, BenchPlots.BOUND_COLOUR, 10)).isGreaterThan(200);
    }

    @Test
    void shouldPlotEachLoadersMedianWallTimeAtEachStepInItsColour() {
        XYChart chart = plots.wallChart();
        assertThat(chart.getTitle())
                .isEqualTo(
                        "Wall time against simulated accelerator step (median of 2 run(s) per"
                                + " point, whiskers min-max)");
        assertThat(chart.getXAxisTitle()).isEqualTo("simulated accelerator step (ms)");
        assertThat(chart.getYAxisTitle()).isEqualTo("wall time (s)");
        assertThat(chart.getSeriesMap().keySet())
                .containsExactly(
                        "minato",
                        "minato" + BenchPlots.WHISKERS,
                        "inorder",
                        "inorder" + BenchPlots.WHISKERS,
                        BenchPlots.BOUND);
        XYSeries minato = chart.getSeriesMap().get("minato");
        assertThat(minato.getXData()).containsExactly(0, 100);
        assertThat(minato.getYData()).containsExactly(2.5, 8.5);
        assertThat(minato.getLineColor()).isEqualTo(BenchPlots.colour(0));
        assertThat(minato.getMarkerColor()).isEqualTo(BenchPlots.colour(0));
        assertThat(minato.isShowInLegend()).isTrue();
        XYSeries inorder = chart.getSeriesMap().get("inorder");
        assertThat(inorder.getXData()).containsExactly(0, 100);
        assertThat(inorder.getYData()).containsExactly(6.5, 4.5);
        assertThat(inorder.getLineColor()).isEqualTo(BenchPlots.colour(1));
        assertThat(chart.getStyler().getXAxisMin()).isZero();
        assertThat(chart.getStyler().getYAxisMin()).isZero();
    }

    @Test
    void shouldDrawWhiskersFromTheFastestToTheSlowestRunOutOfTheLegend() {
        XYChart chart = plots.wallChart();
        XYSeries minato = chart.getSeriesMap().get("minato" + BenchPlots.WHISKERS);
        XYSeries inorder = chart.getSeriesMap().get("inorder" + BenchPlots.WHISKERS);
        // From min to max at each step, a gap (NaN) before the next step's.
        assertThat(minato.getYData()).containsExactly(2, 3, Double.NaN, 8, 9, Double.NaN);
        assertThat(inorder.getYData()).containsExactly(6, 7, Double.NaN, 4, 5, Double.NaN);
        double dodge = BenchPlots.DODGE * 100;
        for (int k = 0; k < 6; k++) {
            double step = k < 3 ? 0 : 100;
            assertThat(minato.getXData()[k]).isCloseTo(step - dodge / 2, offset(1e-9));
            assertThat(inorder.getXData()[k]).isCloseTo(step + dodge / 2, offset(1e-9));
        }
        assertThat(minato.getLineColor()).isEqualTo(BenchPlots.colour(0));
        assertThat(inorder.getLineColor()).isEqualTo(BenchPlots.colour(1));
        assertThat(minato.isShowInLegend()).isFalse();
        assertThat(inorder.isShowInLegend()).isFalse();
        // Error bars of 0 at each end: XChart caps them.
        assertThat(minato.getExtraValues()).hasSize(6).containsOnly(0);
    }

    @Test
    void shouldDrawTheMedianBoundDashed() {
        XYSeries bound = plots.wallChart().getSeriesMap().get(BenchPlots.BOUND);
        assertThat(bound.getXData()).containsExactly(0, 100);
        assertThat(bound.getYData()).containsExactly(1, 3);
        assertThat(bound.getLineColor()).isEqualTo(BenchPlots.BOUND_COLOUR);
        assertThat(bound.getLineStyle().getDashArray()).isNotEmpty();
        assertThat(plots.wallChart().getSeriesMap().get("minato").getLineStyle().getDashArray())
                .isNull();
    }

    @Test
    void shouldPlotBusyPercentOnAnAxisToOneHundredWithoutWhiskers() {
        XYChart chart = plots.busyChart();
        assertThat(chart.getTitle())
                .isEqualTo(
                        "Accelerator busy against simulated accelerator step (median of 2 run(s)"
                                + " per point)");
        assertThat(chart.getYAxisTitle()).isEqualTo("accelerator busy (%)");
        assertThat(chart.getStyler().getYAxisMax()).isEqualTo(100);
        assertThat(chart.getSeriesMap().keySet()).containsExactly("minato", "inorder");
        assertThat(chart.getSeriesMap().get("minato").getXData()).containsExactly(0, 100);
        assertThat(chart.getSeriesMap().get("minato").getYData())
                .usingComparatorWithPrecision(1e-9)
                .containsExactly(6, 85);
        assertThat(chart.getSeriesMap().get("inorder").getYData())
                .usingComparatorWithPrecision(1e-9)
                .containsExactly(10, 50);
    }

    @Test
    void shouldPlotOnlyTheStepsALoaderRanAndSayWhenRowsHaveFewerRuns() throws Exception {
        // Without minato's second run at 100 ms and all of inorder's at 100 ms.
        List<BenchPlots.Run> runs =
                BenchPlots.read(dir.resolve("bench.json")).stream()
                        .filter(r -> r.stepMs() == 0 || r.loader().equals("minato") && r.rep() == 1)
                        .toList();
        BenchPlots fewer = new BenchPlots(runs);
        XYChart chart = fewer.wallChart();
        assertThat(chart.getTitle()).contains("median of 1-2 run(s) per point");
        assertThat(chart.getSeriesMap().get("minato").getXData()).containsExactly(0, 100);
        assertThat(chart.getSeriesMap().get("minato").getYData()).containsExactly(2.5, 8);
        assertThat(chart.getSeriesMap().get("inorder").getXData()).containsExactly(0);
        assertThat(chart.getSeriesMap().get("inorder" + BenchPlots.WHISKERS).getYData())
                .containsExactly(6, 7, Double.NaN);
        // The bound's median over the runs at each step, whichever loader ran them.
        assertThat(chart.getSeriesMap().get(BenchPlots.BOUND).getYData()).containsExactly(1, 3);
        assertThat(fewer.write(dir.resolve("fewer")))
                .containsExactly(dir.resolve("fewer/wall.png"), dir.resolve("fewer/busy.png"));
    }

    @Test
    void shouldGiveManyLoadersDistinctColours() {
        for (int a = 0; a < 12; a++) {
            for (int b = 0; b < a; b++) {
                assertThat(BenchPlots.colour(a)).isNotEqualTo(BenchPlots.colour(b));
            }
        }
    }

    @Test
    void shouldNameTheFileAndTheRunMissingAField() throws IOException {
        Path bad =
                Files.writeString(
                        dir.resolve("no-busy.json"),
                        BenchFixture.json().replace("\"busy_fraction\": 0.9,", ""));
        assertThatThrownBy(() -> BenchPlots.read(bad))
                .isInstanceOf(BadInputException.class)
                .hasMessage(bad + ": run 6: \"accelerator.busy_fraction\" is missing");
        Path word =
                Files.writeString(
                        dir.resolve("word.json"),
                        BenchFixture.json()
                                .replaceFirst(
                                        "\"first_epoch\": \\{\"wall_s\": [0-9.]+",
                                        "\"first_epoch\": {\"wall_s\": \"slow\""));
        assertThatThrownBy(() -> BenchPlots.read(word))
                .isInstanceOf(BadInputException.class)
                .hasMessage(word + ": run 0: \"first_epoch.wall_s\" is not a number");
        Path object = Files.writeString(dir.resolve("object.json"), "{\"runs\": []}");
        assertThatThrownBy(() -> BenchPlots.read(object))
                .hasMessage(object + ": expected an array of run reports");
        Path empty = Files.writeString(dir.resolve("empty.json"), "[]");
        assertThatThrownBy(() -> BenchPlots.read(empty))
                .hasMessage(empty + ": no runs in the array");
    }

    /** Pixels in {@code area} within {@code tolerance} of {@code c} in every channel. */
    static int count(BufferedImage image, Rectangle area, Color c, int tolerance) {
        int n = 0;
        for (int y = area.y; y < area.y + area.height; y++) {
            for (int x = area.x; x < area.x + area.width; x++) {
                n += near(image.getRGB(x, y), c, tolerance) ? 1 : 0;
            }
        }
        return n;
    }

    private static boolean near(int rgb, Color c, int tolerance) {
        return Math.abs(((rgb >> 16) & 0xff) - c.getRed()) <= tolerance
                && Math.abs(((rgb >> 8) & 0xff) - c.getGreen()) <= tolerance
                && Math.abs((rgb & 0xff) - c.getBlue()) <= tolerance;
    }
}
