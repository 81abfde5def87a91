package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.trainer.DeviceCounters;
import io.minato.trainer.DeviceSummary;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report built from device summaries left in a run directory, without running a job. */
class RunReportTest {
    private static final long GIB = 1L << 30;

    @TempDir Path run;

    @Test
    void shouldAggregateTheGpuReadingsOfTwoDevicesAfterTheAccelerator() throws IOException {
        summary(0, new GpuStats(10, 80.0, 5 * GIB, 80 * GIB));
        summary(1, new GpuStats(12, 60.0, 7 * GIB, 80 * GIB));

        String json = report(2).toJson();

        assertThat(json)
                .contains(
                        "  \"gpu\": {\"devices\": 2, \"utilization_mean_percent\": 70.0,"
                                + " \"memory_peak_bytes\": 7516192768,"
                                + " \"memory_total_bytes\": 85899345920},\n");
        assertThat(json.indexOf("\"accelerator\": "))
                .isLessThan(json.indexOf("\"gpu\": "))
                .isLessThan(json.indexOf("\"prep_ms\": "));
        assertThat(json.substring(json.indexOf("\"accelerator\": "), json.indexOf("\"prep_ms\"")))
                .as("gpu comes right after accelerator")
                .matches("(?s)\"accelerator\": \\{[^}]*\\},\n  \"gpu\": \\{[^}]*\\},\n  ");
    }

    @Test
    void shouldCountOnlyDevicesWithReadingsAndLeaveUnreportedUtilisationOutOfTheMean()
            throws IOException {
        summary(0, new GpuStats(4, Double.NaN, 2 * GIB, 40 * GIB)); // a MIG instance
        summary(1, new GpuStats(4, 30.0, 1 * GIB, 80 * GIB));
        summary(2, null);

        assertThat(report(3).toJson())
                .contains(
                        "\"gpu\": {\"devices\": 2, \"utilization_mean_percent\": 30.0,"
                                + " \"memory_peak_bytes\": 2147483648,"
                                + " \"memory_total_bytes\": 85899345920}");
    }

    @Test
    void shouldWriteNullUtilisationWhenNoDeviceReportedIt() throws IOException {
        summary(0, new GpuStats(4, Double.NaN, 2 * GIB, 40 * GIB));

        assertThat(report(1).toJson()).contains("\"utilization_mean_percent\": null,");
    }

    @Test
    void shouldReportNullGpuWhenNoDeviceHadAGpu() throws IOException {
        summary(0, null);
        summary(1, null);

        String json = report(2).toJson();

        assertThat(json).contains("  \"gpu\": null,\n  \"prep_ms\": ");
        assertThat(json).contains("\"kind\": \"gpu\"", "\"steps\": 3", "\"delivered\": 12");
    }

    @Test
    void shouldNameTheFileOfAMalformedSummaryInOneLine() throws IOException {
        summary(0, null);
        Path bad = DeviceSummary.file(run, 1);
        Files.writeString(
                bad,
                DeviceSummary.of(1, "gpu", counters(), null)
                        .toJson()
                        .replace(", \"gpu_samples\": null", ""));

        assertThatThrownBy(() -> report(2))
                .isInstanceOf(IOException.class)
                .hasMessage("bad device summary " + bad + ": \"gpu_samples\" is missing");
    }

    private void summary(int device, GpuStats gpu) throws IOException {
        DeviceSummary.of(device, "gpu", counters(), gpu).write(run);
    }

    /** Three steps, six samples (four fast), 3 s busy. */
    private static DeviceCounters counters() {
        return new DeviceCounters(3, 4, 2, 3_000_000_000L, 0, 1.0, 0.5, 1_000, 4_000);
    }

    private RunReport report(int devices) throws IOException {
        return RunReport.build(
                new RunReport.Inputs(
                        "minato",
                        devices,
                        2,
                        32,
                        1,
                        7,
                        10,
                        6 * devices,
                        2,
                        0,
                        500,
                        2,
                        1.0,
                        null,
                        null,
                        null,
                        null,
                        null),
                run);
    }
}
