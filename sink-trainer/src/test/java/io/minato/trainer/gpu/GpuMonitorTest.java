package io.minato.trainer.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.Test;

class GpuMonitorTest {

    @Test
    void shouldBeAbsentOnAMachineWithoutGpu() {
        GpuProbeTest.assumeNoNvidiaDriver();
        try (GpuMonitor monitor = GpuMonitor.open(0)) {
            assertThat(monitor.present()).isFalse();
            assertThat(monitor.gpu()).isEmpty();
            assertThat(monitor.sample()).isEmpty();
        }
    }

    @Test
    void shouldBeAbsentForAnIndexTheProbeDidNotFind() {
        Gpus two = Gpus.found(List.of(new Gpu(0, "a", 1), new Gpu(1, "b", 1)));

        assertThat(GpuMonitor.open(2, two)).isSameAs(GpuMonitor.absent());
        assertThat(GpuMonitor.open(0, Gpus.none("test", ""))).isSameAs(GpuMonitor.absent());
    }

    @Test
    void shouldCloseTheAbsentMonitorAnyNumberOfTimes() {
        GpuMonitor monitor = GpuMonitor.absent();
        monitor.close();
        monitor.close();
        assertThat(monitor.sample()).isEmpty();
    }

    @Test
    void shouldExportMinusOneGaugesWhenThereIsNothingToRead() {
        Map<String, Gauge<?>> gauges = new HashMap<>();
        MetricGroup group =
                new UnregisteredMetricsGroup() {
                    @Override
                    public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
                        gauges.put(name, gauge);
                        return gauge;
                    }
                };

        GpuMonitor.absent().registerGauges(group);

        assertThat(gauges).containsOnlyKeys("gpuUtilizationPercent", "gpuMemoryUsedBytes");
        assertThat(gauges.get(GpuMonitor.UTILIZATION_GAUGE).getValue()).isEqualTo(-1);
        assertThat(gauges.get(GpuMonitor.MEMORY_USED_GAUGE).getValue()).isEqualTo(-1L);
    }
}
