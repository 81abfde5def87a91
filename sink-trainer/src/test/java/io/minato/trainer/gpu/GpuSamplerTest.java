package io.minato.trainer.gpu;

import static io.minato.trainer.gpu.FakeGpuMonitor.sample;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class GpuSamplerTest {
    private static final long GIB = 1L << 30;

    @Test
    void shouldKeepTheMeanUtilisationAndThePeakMemoryOfItsReadings() {
        FakeGpuMonitor monitor =
                FakeGpuMonitor.scripted(
                        sample(20, 1 * GIB, 8 * GIB),
                        sample(70, 3 * GIB, 8 * GIB),
                        sample(30, 2 * GIB, 8 * GIB));
        GpuSampler sampler = new GpuSampler(monitor);
        assertThat(sampler.stats()).isEmpty();

        for (int i = 0; i < 5; i++) {
            sampler.sampleNow(); // the last two get no answer: not counted
        }

        assertThat(sampler.stats()).contains(new GpuStats(3, 40.0, 3 * GIB, 8 * GIB));
        sampler.close();
        assertThat(monitor.closed()).isTrue();
    }

    @Test
    void shouldCountReadingsWithoutUtilisationButLeaveThemOutOfTheMean() {
        GpuSampler sampler =
                new GpuSampler(
                        FakeGpuMonitor.scripted(sample(-1, 5, 10), sample(-1, 7, 10))); // MIG
        sampler.sampleNow();
        sampler.sampleNow();

        GpuStats stats = sampler.stats().orElseThrow();
        assertThat(stats.samples()).isEqualTo(2);
        assertThat(stats.utilizationMeanPercent()).isNaN();
        assertThat(stats.memoryPeakBytes()).isEqualTo(7);
    }

    @Test
    void shouldKeepSamplingAfterAReadingThrows() {
        GpuMonitor flaky =
                new GpuMonitor() {
                    private int reads;

                    @Override
                    public Optional<Gpu> gpu() {
                        return Optional.of(new Gpu(0, "flaky", 10));
                    }

                    @Override
                    public Optional<Sample> sample() {
                        if (reads++ == 0) {
                            throw new IllegalStateException("driver hiccup");
                        }
                        return Optional.of(new Sample(50, 4, 10));
                    }

                    @Override
                    public void close() {}
                };
        GpuSampler sampler = new GpuSampler(flaky);
        sampler.sampleNow();
        sampler.sampleNow();
        assertThat(sampler.stats()).contains(new GpuStats(1, 50.0, 4, 10));
    }

    @Test
    void shouldSamplePeriodicallyOnADaemonThreadUntilClosed() throws InterruptedException {
        FakeGpuMonitor monitor = FakeGpuMonitor.constant(sample(40, 3 * GIB, 8 * GIB));
        GpuSampler sampler = GpuSampler.start(monitor, "gpu-sampler-test", Duration.ofMillis(5));
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (sampler.stats().map(GpuStats::samples).orElse(0L) < 3) {
            assertThat(System.nanoTime()).as("3 readings within 10 s").isLessThan(deadline);
            Thread.sleep(2);
        }
        assertThat(threadNamed("gpu-sampler-test").orElseThrow().isDaemon()).isTrue();

        sampler.close();

        assertThat(monitor.closed()).isTrue();
        int reads = monitor.reads();
        Thread.sleep(50);
        assertThat(monitor.reads()).as("no reading after close").isEqualTo(reads);
        assertThat(sampler.stats().orElseThrow().utilizationMeanPercent()).isEqualTo(40.0);
    }

    @Test
    void shouldStartNoThreadForAnAbsentMonitor() {
        GpuSampler sampler =
                GpuSampler.start(GpuMonitor.absent(), "gpu-sampler-absent", Duration.ofMillis(5));
        assertThat(threadNamed("gpu-sampler-absent")).isEmpty();
        assertThat(sampler.stats()).isEmpty();
        sampler.close();
        sampler.close();
    }

    @Test
    void shouldRejectANonPositivePeriod() {
        assertThatThrownBy(() -> GpuSampler.start(GpuMonitor.absent(), "t", Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("GPU sampling period must be > 0: PT0S");
    }

    @Test
    void shouldRejectStatisticsWithoutSamplesOrOutOfRange() {
        assertThatThrownBy(() -> new GpuStats(0, 10, 1, 1))
                .hasMessage("GPU statistics need at least 1 sample: 0");
        assertThatThrownBy(() -> new GpuStats(1, 101, 1, 1))
                .hasMessage("GPU utilisation must be 0 to 100 %: 101.0");
        assertThatThrownBy(() -> new GpuStats(1, 10, -1, 1))
                .hasMessage("GPU memory must be >= 0 bytes: peak -1, total 1");
    }

    private static Optional<Thread> threadNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(name) && t.isAlive())
                .findFirst();
    }
}
