package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DeviceSummaryTest {

    @TempDir Path dir;

    @Test
    void shouldRoundTripThroughItsJsonFile() throws IOException {
        DeviceSummary s =
                new DeviceSummary(
                        2,
                        "gpu",
                        48,
                        96,
                        80,
                        16,
                        12.5,
                        0.031,
                        0.0155,
                        1.25,
                        0.0625,
                        1_760_000_000_123L,
                        1_760_000_012_456L,
                        1_760_000_003_000L,
                        24,
                        new GpuStats(25, 87.5, 61_203_283_968L, 85_520_809_984L));
        Path file = s.write(dir);
        assertThat(Files.readString(file))
                .contains(
                        "\"gpu_samples\": 25, \"gpu_util_mean_percent\": 87.5,"
                                + " \"gpu_mem_peak_bytes\": 61203283968,"
                                + " \"gpu_mem_total_bytes\": 85520809984}");
        assertThat(Files.readString(file))
                .contains(
                        "\"first_epoch_end_ms\": 1760000003000, \"samples_at_first_epoch_end\":"
                                + " 24");
        assertThat(file).isEqualTo(dir.resolve("summary-device-2.json"));
        assertThat(DeviceSummary.read(file)).isEqualTo(s);
    }

    @Test
    void shouldWriteMissingLossesAsNullAndReadThemBackAsNaN() throws IOException {
        DeviceSummary s = DeviceSummary.of(0, "sim\"ulated\\", DeviceCounters.ZERO, null);
        String json = s.toJson();
        assertThat(json).contains("\"loss_first\": null").contains("\"loss_last\": null");
        assertThat(json)
                .contains(
                        "\"gpu_samples\": null, \"gpu_util_mean_percent\": null,"
                                + " \"gpu_mem_peak_bytes\": null, \"gpu_mem_total_bytes\": null");
        assertThat(json).contains("\"accelerator\": \"sim\\\"ulated\\\\\"");
        DeviceSummary back = DeviceSummary.read(s.write(dir));
        assertThat(back.firstLoss()).isNaN();
        assertThat(back.accelerator()).isEqualTo("sim\"ulated\\");
        assertThat(back).isEqualTo(s);
        assertThat(back.gpu()).isNull();
    }

    @Test
    void shouldWriteAGpuWithoutUtilisationReadingsAsNullUtilisation() throws IOException {
        DeviceSummary s =
                DeviceSummary.of(
                        0, "gpu", DeviceCounters.ZERO, new GpuStats(3, Double.NaN, 1024, 4096));
        assertThat(s.toJson()).contains("\"gpu_samples\": 3, \"gpu_util_mean_percent\": null,");
        DeviceSummary back = DeviceSummary.read(s.write(dir));
        assertThat(back.gpu().utilizationMeanPercent()).isNaN();
        assertThat(back).isEqualTo(s);
    }

    @Test
    void shouldNameTheFileAndTheProblemOfMalformedGpuFields() throws IOException {
        String counters =
                "{\"device\": 0, \"accelerator\": \"gpu\", \"steps\": 1, \"samples\": 2,"
                        + " \"fast\": 2, \"slow\": 0, \"busy_s\": 0.5, \"wait_s\": 0.0, \"head_of_line_s\": 0.0,"
                        + " \"loss_first\": null, \"loss_last\": null, \"first_step_start_ms\": 1,"
                        + " \"last_step_end_ms\": 2";
        assertBad(counters + "}", "\"first_epoch_end_ms\" is missing");
        counters += ", \"first_epoch_end_ms\": 2, \"samples_at_first_epoch_end\": 2";
        assertBad(counters + "}", "\"gpu_samples\" is missing");
        assertBad(
                counters
                        + ", \"gpu_samples\": 2, \"gpu_util_mean_percent\": 50.0,"
                        + " \"gpu_mem_total_bytes\": 8}",
                "\"gpu_mem_peak_bytes\" is missing");
        assertBad(
                counters
                        + ", \"gpu_samples\": null, \"gpu_util_mean_percent\": null,"
                        + " \"gpu_mem_peak_bytes\": 4, \"gpu_mem_total_bytes\": null}",
                "\"gpu_mem_peak_bytes\" is set but \"gpu_samples\" is null");
        assertBad(
                counters
                        + ", \"gpu_samples\": 2, \"gpu_util_mean_percent\": 50.0,"
                        + " \"gpu_mem_peak_bytes\": null, \"gpu_mem_total_bytes\": 8}",
                "\"gpu_mem_peak_bytes\" is null but \"gpu_samples\" is set");
        assertBad(
                counters
                        + ", \"gpu_samples\": 0, \"gpu_util_mean_percent\": 50.0,"
                        + " \"gpu_mem_peak_bytes\": 4, \"gpu_mem_total_bytes\": 8}",
                "GPU statistics need at least 1 sample: 0");
        assertBad(
                counters
                        + ", \"gpu_samples\": 2, \"gpu_util_mean_percent\": \"high\","
                        + " \"gpu_mem_peak_bytes\": 4, \"gpu_mem_total_bytes\": 8}",
                "\"gpu_util_mean_percent\" is not a number");
        assertBad(
                counters
                        + ", \"gpu_samples\": 2, \"gpu_util_mean_percent\": 150.0,"
                        + " \"gpu_mem_peak_bytes\": 4, \"gpu_mem_total_bytes\": 8}",
                "GPU utilisation must be 0 to 100 %: 150.0");
    }

    private void assertBad(String json, String problem) throws IOException {
        Path file = dir.resolve("summary-device-0.json");
        Files.writeString(file, json);
        assertThatThrownBy(() -> DeviceSummary.read(file))
                .isInstanceOf(IOException.class)
                .hasMessage("bad device summary " + file + ": " + problem);
    }

    @Test
    void shouldNameTheFileAndTheProblemOfAMalformedSummary() throws IOException {
        Path missing = dir.resolve("summary-device-0.json");
        Files.writeString(missing, "{\"device\": 0, \"accelerator\": \"cpu\"}");
        assertThatThrownBy(() -> DeviceSummary.read(missing))
                .isInstanceOf(IOException.class)
                .hasMessageContaining(missing.toString())
                .hasMessageContaining("\"steps\" is missing");

        Path broken = dir.resolve("summary-device-1.json");
        Files.writeString(broken, "{\"device\": 1,");
        assertThatThrownBy(() -> DeviceSummary.read(broken))
                .isInstanceOf(IOException.class)
                .hasMessage(
                        "bad device summary "
                                + broken
                                + ": Unexpected end-of-input within/between Object entries at"
                                + " line 1, column 14");

        Path array = dir.resolve("summary-device-2.json");
        Files.writeString(array, "[1, 2]");
        assertThatThrownBy(() -> DeviceSummary.read(array))
                .isInstanceOf(IOException.class)
                .hasMessage("bad device summary " + array + ": expected an object");

        Path nested = dir.resolve("summary-device-3.json");
        Files.writeString(nested, "{\"device\": 3, \"steps\": {\"n\": 1}}");
        assertThatThrownBy(() -> DeviceSummary.read(nested))
                .isInstanceOf(IOException.class)
                .hasMessage(
                        "bad device summary "
                                + nested
                                + ": \"steps\" is neither a string, a number nor null");
    }
}
