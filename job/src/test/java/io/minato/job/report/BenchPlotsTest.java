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

/** The table and plots of a small synthetic bench.json ({@link BenchFixture}), read back. */
class BenchPlotsTest {
    /** Inside the frame, clear of its lines: only data and grid are drawn here. */
    private static final Rectangle INSIDE =
            new Rectangle(
                    LineChart.FRAME.x + 2,
                    LineChart.FRAME.y + 2,
                    LineChart.FRAME.width - 4,
                    LineChart.FRAME.height - 4);

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
    void shouldWriteTwoPngsOfTheChartSizeWithTextAboveThePlot() {
        for (BufferedImage image : List.of(wall, busy)) {
            assertThat(image.getWidth()).isEqualTo(LineChart.WIDTH);
            assertThat(image.getHeight()).isEqualTo(LineChart.HEIGHT);
            // The title: dark pixels in the band above the frame, so fonts rendered.
            assertThat(count(image, new Rectangle(0, 0, LineChart.WIDTH, 40), Color.BLACK, 80))
                    .isGreaterThan(100);
            // Tick labels left of the frame, the legend's names right of it.
            assertThat(count(image, new Rectangle(0, 60, 80, 460), Color.BLACK, 80))
                    .isGreaterThan(50);
            assertThat(count(image, new Rectangle(770, 60, 190, 100), Color.BLACK, 80))
                    .isGreaterThan(50);
        }
    }

    @Test
    void shouldDrawEachLoaderInItsOwnColourInsideThePlot() {
        assertThat(BenchPlots.colour(0)).isNotEqualTo(BenchPlots.colour(1));
        for (BufferedImage image : List.of(wall, busy)) {
            for (int l = 0; l < 2; l++) {
                assertThat(count(image, INSIDE, BenchPlots.colour(l), 30))
                        .as("loader %d", l)
                        .isGreaterThan(500);
            }
        }
    }

    @Test
    void shouldDrawTheWallLineUpWhereTheWallTimeGoesUp() {
        LineChart chart = plots.wallChart();
        assertThat(chart.yMax()).isEqualTo(10);
        assertThat(chart.xMax()).isEqualTo(100);
        Rectangle left = new Rectangle(INSIDE.x, INSIDE.y, INSIDE.width / 4, INSIDE.height);
        Rectangle right =
                new Rectangle(
                        INSIDE.x + 3 * INSIDE.width / 4, INSIDE.y, INSIDE.width / 4, INSIDE.height);
        // Rows grow downwards: minato (2.5 s, then 8.5 s) sits higher on the right.
        assertThat(meanRow(wall, right, BenchPlots.colour(0)))
                .isLessThan(meanRow(wall, left, BenchPlots.colour(0)) - 100);
        // inorder (6.5 s, then 4.5 s) lower on the right.
        assertThat(meanRow(wall, right, BenchPlots.colour(1)))
                .isGreaterThan(meanRow(wall, left, BenchPlots.colour(1)) + 40);
        // And every median's marker is where the axes put it.
        for (BenchPlots.Row r : plots.rows()) {
            Color c = BenchPlots.colour(plots.loaders().indexOf(r.loader()));
            assertThat(at(wall, chart.px(r.stepMs()), chart.py(r.wallS()), c))
                    .as("marker of %s", r)
                    .isTrue();
        }
    }

    @Test
    void shouldDrawWhiskersFromTheFastestToTheSlowestRun() {
        LineChart chart = plots.wallChart();
        // minato at 100 ms: 8 s to 9 s, about 40 pixels; its marker alone is 9.
        int x = (int) Math.round(chart.px(100));
        Rectangle column = new Rectangle(x - 6, INSIDE.y, 12, INSIDE.height);
        int[] rows = rowRange(wall, column, BenchPlots.colour(0));
        assertThat((double) rows[0]).isCloseTo(chart.py(9), offset(3.0));
        assertThat((double) rows[1]).isCloseTo(chart.py(8), offset(3.0));
        // ... unbroken between them, not just caps and a marker.
        for (int y = (int) chart.py(9) + 2; y < chart.py(8) - 2; y++) {
            Rectangle row = new Rectangle(column.x, y, column.width, 1);
            assertThat(count(wall, row, BenchPlots.colour(0), 30)).as("row %d", y).isPositive();
        }
    }

    @Test
    void shouldDrawTheMedianBoundAsADashedLineBelowTheLoaders() {
        LineChart chart = plots.wallChart();
        int from = (int) chart.px(0) + 15;
        int to = (int) chart.px(100) - 15;
        int columns = 0;
        for (int x = from; x < to; x++) {
            if (count(
                            wall,
                            new Rectangle(x, INSIDE.y, 1, INSIDE.height),
                            BenchPlots.BOUND_COLOUR,
                            30)
                    > 0) {
                columns++;
            }
        }
        // Dashes of 9 pixels, gaps of 6.
        assertThat(columns).isBetween((to - from) * 3 / 10, (to - from) * 9 / 10);
        // Through 1 s at 0 ms and 3 s at 100 ms: 2 s in the middle.
        Rectangle middle = new Rectangle((from + to) / 2 - 20, INSIDE.y, 40, INSIDE.height);
        assertThat(meanRow(wall, middle, BenchPlots.BOUND_COLOUR))
                .isCloseTo(chart.py(2), offset(4.0));
    }

    @Test
    void shouldPlotBusyPercentOnAnAxisToOneHundred() {
        LineChart chart = plots.busyChart();
        assertThat(chart.yMax()).isEqualTo(100);
        for (BenchPlots.Row r : plots.rows()) {
            Color c = BenchPlots.colour(plots.loaders().indexOf(r.loader()));
            assertThat(at(busy, chart.px(r.stepMs()), chart.py(r.busyPercent()), c))
                    .as("marker of %s", r)
                    .isTrue();
        }
        Rectangle left = new Rectangle(INSIDE.x, INSIDE.y, INSIDE.width / 4, INSIDE.height);
        Rectangle right =
                new Rectangle(
                        INSIDE.x + 3 * INSIDE.width / 4, INSIDE.y, INSIDE.width / 4, INSIDE.height);
        assertThat(meanRow(busy, right, BenchPlots.colour(0)))
                .isLessThan(meanRow(busy, left, BenchPlots.colour(0)) - 200);
    }

    @Test
    void shouldEndAxesAtRoundNumbersWithFewTicks() {
        assertThat(LineChart.axis(100)).containsExactly(100, 20);
        assertThat(LineChart.axis(160)).containsExactly(160, 20);
        assertThat(LineChart.axis(9.3)).containsExactly(10, 2);
        assertThat(LineChart.axis(0.37)).containsExactly(0.4, 0.05);
        assertThat(LineChart.axis(20)).containsExactly(20, 5);
        assertThat(LineChart.axis(45)).containsExactly(50, 10);
        assertThat(LineChart.axis(0)).containsExactly(1, 0.2);
        assertThat(LineChart.tick(40, 20)).isEqualTo("40");
        assertThat(LineChart.tick(7.5, 2.5)).isEqualTo("7.5");
        assertThat(LineChart.tick(0.1, 0.05)).isEqualTo("0.10");
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

    private static double meanRow(BufferedImage image, Rectangle area, Color c) {
        long sum = 0;
        int n = 0;
        for (int y = area.y; y < area.y + area.height; y++) {
            for (int x = area.x; x < area.x + area.width; x++) {
                if (near(image.getRGB(x, y), c, 30)) {
                    sum += y;
                    n++;
                }
            }
        }
        assertThat(n).as("pixels of %s in %s", c, area).isPositive();
        return (double) sum / n;
    }

    /** The first and last row holding colour {@code c} in {@code area}. */
    private static int[] rowRange(BufferedImage image, Rectangle area, Color c) {
        int first = -1;
        int last = -1;
        for (int y = area.y; y < area.y + area.height; y++) {
            for (int x = area.x; x < area.x + area.width; x++) {
                if (near(image.getRGB(x, y), c, 30)) {
                    first = first < 0 ? y : first;
                    last = y;
                }
            }
        }
        return new int[] {first, last};
    }

    /** Whether the pixel at (x, y) is of colour {@code c}. */
    private static boolean at(BufferedImage image, double x, double y, Color c) {
        return near(image.getRGB((int) Math.round(x), (int) Math.round(y)), c, 30);
    }

    private static boolean near(int rgb, Color c, int tolerance) {
        return Math.abs(((rgb >> 16) & 0xff) - c.getRed()) <= tolerance
                && Math.abs(((rgb >> 8) & 0xff) - c.getGreen()) <= tolerance
                && Math.abs((rgb & 0xff) - c.getBlue()) <= tolerance;
    }
}
