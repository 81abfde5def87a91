package io.minato.trainer.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class DeviceRequestTest {

    @Test
    void shouldReadEachFormWithoutLookingAtTheMachine() {
        assertThat(DeviceRequest.parse(null).form()).isEqualTo(DeviceRequest.Form.DEFAULT);
        assertThat(DeviceRequest.parse("  ").form()).isEqualTo(DeviceRequest.Form.DEFAULT);
        assertThat(DeviceRequest.parse("cpu").count()).isEqualTo(1);
        DeviceRequest cpus = DeviceRequest.parse(" CPU:3 ");
        assertThat(cpus.form()).isEqualTo(DeviceRequest.Form.CPU);
        assertThat(cpus.count()).isEqualTo(3);
        assertThat(cpus.spec()).isEqualTo("cpu:3");
        assertThat(DeviceRequest.parse("gpu").form()).isEqualTo(DeviceRequest.Form.ALL_GPUS);
        assertThat(DeviceRequest.parse("gpus:2").count()).isEqualTo(2);
        assertThat(DeviceRequest.parse("gpu:2, 0").indices()).isEqualTo(List.of(2, 0));
        assertThat(DeviceRequest.parse("gpu1,gpu3").indices()).isEqualTo(List.of(1, 3));
        assertThat(DeviceRequest.parse("gpu:1").namesGpus()).isTrue();
    }

    @Test
    void shouldRefuseAnUnknownKindAtTheOptionNamingTheOptionAndTheForms() {
        assertThatThrownBy(() -> DeviceRequest.parse("gpux", "--on"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "--on 'gpux': unknown device kind; expected cpu, cpu:N (N >= 1 replicas on"
                                + " the CPU), gpu (all GPUs), gpus:N (N >= 1 GPUs) or gpu:I,J,..."
                                + " (GPU indices)");
    }
}
