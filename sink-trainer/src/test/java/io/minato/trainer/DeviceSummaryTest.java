package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
                        1.25,
                        0.0625,
                        1_760_000_000_123L,
                        1_760_000_012_456L);
        Path file = s.write(dir);
        assertThat(file).isEqualTo(dir.resolve("summary-device-2.json"));
        assertThat(DeviceSummary.read(file)).isEqualTo(s);
    }

    @Test
    void shouldWriteMissingLossesAsNullAndReadThemBackAsNaN() throws IOException {
        DeviceSummary s = DeviceSummary.of(0, "sim\"ulated\\", DeviceCounters.ZERO);
        String json = s.toJson();
        assertThat(json).contains("\"loss_first\": null").contains("\"loss_last\": null");
        assertThat(json).contains("\"accelerator\": \"sim\\\"ulated\\\\\"");
        DeviceSummary back = DeviceSummary.read(s.write(dir));
        assertThat(back.firstLoss()).isNaN();
        assertThat(back.accelerator()).isEqualTo("sim\"ulated\\");
        assertThat(back).isEqualTo(s);
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
                .hasMessageContaining(broken.toString())
                .hasMessageContaining("at offset");
    }
}
