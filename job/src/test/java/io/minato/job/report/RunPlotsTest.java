package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.minato.sample.SamplePath;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunPlotsTest {
    @TempDir Path dir;

    private static final long MS = 1_000_000L;

    private static RunSampler.Sample at(long millis, long cpuMillis, long busyMillis) {
        return new RunSampler.Sample(millis, 1, 1, cpuMillis * MS, busyMillis * MS);
    }

    @Test
    void shouldShareBusyAmongDevicesAndCpuAmongCores() {
        RunPlots.Usage u =
                RunPlots.usage(
                        List.of(
                                at(10_000, 0, 0),
                                at(11_000, 1_000, 500), // 1 of 2 cores, 500 of 2 x 1000 ms busy
                                new RunSampler.Sample(11_500, 1, 1, -1, -1), // not read: skipped
                                at(12_000, 3_000, 2_500)), // both cores, both devices all along
                        2,
                        2);
        assertThat(u.seconds()).containsExactly(1.0, 2.0);
        assertThat(u.cpuPercent()[0]).isCloseTo(50, within(1e-9));
        assertThat(u.busyPercent()[0]).isCloseTo(25, within(1e-9));
        assertThat(u.cpuPercent()[1]).isCloseTo(100, within(1e-9));
        assertThat(u.busyPercent()[1]).isCloseTo(100, within(1e-9));
    }

    @Test
    void shouldAverageOverTheSecondBeforeEachReading() {
        RunPlots.Usage u =
                RunPlots.usage(
                        List.of(
                                at(0, 0, 0),
                                at(250, 0, 0),
                                at(500, 0, 250), // one 250 ms step ended
                                at(750, 0, 250),
                                at(1_000, 0, 500), // another
                                at(1_250, 0, 500)),
                        1,
                        1);
        assertThat(u.seconds()).containsExactly(0.25, 0.5, 0.75, 1.0, 1.25);
        // From the first reading until a second has passed, then over the second before.
        assertThat(u.busyPercent()).containsExactly(0.0, 50.0, 100.0 / 3, 50.0, 50.0);
    }

    @Test
    void shouldCountABusyTotalThatSteppedBackAtARestoreAsIdleAndSkipEmptyIntervals() {
        RunPlots.Usage u =
                RunPlots.usage(List.of(at(0, 0, 800), at(0, 10, 900), at(1_000, 500, 300)), 1, 1);
        assertThat(u.seconds()).containsExactly(1.0);
        assertThat(u.busyPercent()).containsExactly(0.0);
        assertThat(u.cpuPercent()[0]).isCloseTo(49, within(1e-9));
    }

    @Test
    void shouldHaveNoUsageWithoutTwoReadings() {
        assertThat(RunPlots.usage(List.of(), 1, 2)).isNull();
        assertThat(RunPlots.usage(List.of(at(0, 0, 0)), 1, 2)).isNull();
        assertThat(
                        RunPlots.usage(
                                List.of(new RunSampler.Sample(0, 1, 1, -1, -1), at(9, 1, 1)), 1, 2))
                .isNull();
    }

    @Test
    void shouldBinPreparationTimesLogarithmicallyFastAndSlowApart() {
        RunPlots.Histogram h =
                RunPlots.histogram(
                        Map.of(
                                SamplePath.FAST, List.of(1.0, 1.0, 2.0, 0.0),
                                SamplePath.SLOW, List.of(1024.0, 512.0)));
        assertThat(h.upperMillis()).hasSize(RunPlots.BINS);
        assertThat(h.upperMillis()[RunPlots.BINS - 1]).isEqualTo(1024.0);
        // 1e-3 .. 1024 ms in 20 bins: each edge ~2x the one before.
        assertThat(h.upperMillis()[1] / h.upperMillis()[0]).isCloseTo(2.0, within(0.01));
        assertThat(sum(h.fast())).isEqualTo(4);
        assertThat(sum(h.slow())).isEqualTo(2);
        assertThat(h.fast()[0]).as("a zero time lands in the first bin").isEqualTo(1);
        assertThat(h.slow()[RunPlots.BINS - 1]).isEqualTo(1);
        assertThat(h.slow()[RunPlots.BINS - 2]).isEqualTo(1);
    }

    @Test
    void shouldUseOneBinWhenEveryTimeIsAlikeAndNoneWithoutSamples() {
        RunPlots.Histogram h =
                RunPlots.histogram(
                        Map.of(SamplePath.FAST, List.of(5.0, 5.0), SamplePath.SLOW, List.of()));
        assertThat(h.upperMillis()).containsExactly(5.0);
        assertThat(h.fast()).containsExactly(2);
        assertThat(RunPlots.histogram(Map.of(SamplePath.FAST, List.of()))).isNull();
    }

    @Test
    void shouldWriteBothPlotsAsPngs() throws Exception {
        List<Path> written =
                RunPlots.write(
                        dir,
                        List.of(at(0, 0, 0), at(250, 400, 100), at(500, 900, 300)),
                        1,
                        2,
                        Map.of(
                                SamplePath.FAST, List.of(3.0, 4.0, 9.0),
                                SamplePath.SLOW, List.of(300.0)));
        assertThat(written)
                .containsExactly(dir.resolve(RunPlots.USAGE), dir.resolve(RunPlots.PREP_TIMES));
        for (Path png : written) {
            BufferedImage image = ImageIO.read(png.toFile());
            assertThat(image.getWidth()).isEqualTo(RunPlots.WIDTH);
            assertThat(image.getHeight()).isEqualTo(RunPlots.HEIGHT);
        }
    }

    @Test
    void shouldShareTheStepsSpansOverEachSecondAndTheDevices() {
        // Two devices: one busy 0-1500 ms, the other 500-1000 and 1800-2100 ms (a restore's gap).
        RunPlots.Usage u =
                RunPlots.busyFromSteps(
                        List.of(
                                new long[] {10_000, 10_750},
                                new long[] {10_750, 11_500},
                                new long[] {10_500, 11_000},
                                new long[] {11_800, 12_100}),
                        2);
        assertThat(u.seconds()).containsExactly(0.0, 1.0, 1.0, 2.0, 2.0, 2.1);
        // Second 1: 1000 + 500 ms of 2000; second 2: 500 + 200; the last 100 ms: 100 of 200.
        assertThat(u.busyPercent()).containsExactly(75.0, 75.0, 35.0, 35.0, 50.0, 50.0);
        assertThat(u.cpuPercent()).as("no CPU without a client's readings").isNull();
        assertThat(RunPlots.busyFromSteps(List.of(), 1)).isNull();
    }

    @Test
    void shouldDrawADetachedRunsBusyShareFromItsSteps() throws Exception {
        List<Path> written =
                RunPlots.writeFromSteps(
                        dir,
                        List.of(new long[] {0, 900}, new long[] {900, 2100}),
                        1,
                        Map.of(SamplePath.FAST, List.of(3.0), SamplePath.SLOW, List.of()));
        assertThat(written)
                .containsExactly(dir.resolve(RunPlots.USAGE), dir.resolve(RunPlots.PREP_TIMES));
        assertThat(ImageIO.read(dir.resolve(RunPlots.USAGE).toFile()).getWidth())
                .isEqualTo(RunPlots.WIDTH);
    }

    @Test
    void shouldWriteOnlyThePlotsThereIsDataFor() throws Exception {
        assertThat(
                        RunPlots.write(
                                dir,
                                List.of(),
                                1,
                                2,
                                Map.of(SamplePath.FAST, List.of(3.0), SamplePath.SLOW, List.of())))
                .containsExactly(dir.resolve(RunPlots.PREP_TIMES));
        Files.delete(dir.resolve(RunPlots.PREP_TIMES));
        assertThat(RunPlots.write(dir, List.of(), 1, 2, Map.of())).isEmpty();
        try (var files = Files.list(dir)) {
            assertThat(files).isEmpty();
        }
    }

    private static int sum(int[] counts) {
        int s = 0;
        for (int c : counts) {
            s += c;
        }
        return s;
    }
}
