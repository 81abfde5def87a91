package io.minato.trainer.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

public class FlinkGpusTest {

    /** What Flink's GPU driver hands a task: one info per GPU, its index the one property. */
    private record Info(Map<String, String> properties) implements ExternalResourceInfo {
        static Info gpu(String index) {
            return new Info(Map.of("index", index));
        }

        @Override
        public Optional<String> getProperty(String key) {
            return Optional.ofNullable(properties.get(key));
        }

        @Override
        public Collection<String> getKeys() {
            return properties.keySet();
        }
    }

    /** A TaskManager's GPUs as Flink's GPU driver would report {@code indices}. */
    public static FlinkGpus gpus(String... indices) {
        return FlinkGpus.of(java.util.Arrays.stream(indices).map(Info::gpu).toList());
    }

    @Test
    void shouldGiveEachTrainerOneGpuInIndexOrder() throws Exception {
        // A set from the driver has no order; 10 sorts after 2 as a number.
        FlinkGpus gpus = FlinkGpus.of(List.of(Info.gpu("10"), Info.gpu(" 2"), Info.gpu("3")));

        assertThat(gpus.indices()).containsExactly("2", "3", "10");
        assertThat(gpus.forReplica(0, 3)).isEqualTo(2);
        assertThat(gpus.forReplica(2, 3)).isEqualTo(10);
        assertThat(gpus.forReplica(0, 1)).isEqualTo(2);
    }

    @Test
    void shouldTakeTheGpuItsClaimGives() throws Exception {
        FlinkGpus gpus = gpus("4", "6").claimingThrough((device, count) -> count - 1 - device);

        assertThat(gpus.forReplica(0, 4)).isEqualTo(6);
        assertThat(gpus.forReplica(1, 4)).isEqualTo(4);
    }

    @Test
    void shouldSayInOneLineWhenTheTaskManagerHasNoGpuFreeForATrainer() {
        assertThatThrownBy(() -> gpus("1").forReplica(1, 2))
                .isInstanceOf(FlinkGpus.Shortage.class)
                .hasMessage(
                        "device 1 of the 2 the job trains on GPUs from Flink's external resource"
                                + " framework found none free in its TaskManager, which got 1 [1],"
                                + " all taken by the job's other trainers there: set"
                                + " external-resources: gpu and external-resource.gpu.amount in"
                                + " the TaskManagers' config.yaml, with Flink's GPU driver in"
                                + " plugins/ (see the README)");
        assertThatThrownBy(() -> gpus("1", "2").claimingThrough((d, n) -> -1).forReplica(0, 4))
                .isInstanceOf(FlinkGpus.Shortage.class)
                .hasMessageContaining("which got 2 [1, 2], all taken");
        assertThatThrownBy(() -> FlinkGpus.of(List.of()).forReplica(0, 1))
                .hasMessageContaining("in its TaskManager, which got none:");
    }

    @Test
    void shouldRefuseResourcesThatAreNotGpuIndices() {
        assertThatThrownBy(() -> FlinkGpus.of(List.of(new Info(Map.of("uuid", "GPU-1")))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("Flink's external resource 'gpu' has no 'index' property");
        assertThatThrownBy(() -> FlinkGpus.of(List.of(Info.gpu("GPU-1"))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(
                        "Flink's external resource 'gpu' names GPU 'GPU-1', not an index (0, 1,"
                                + " ...)");
    }

    @Test
    void shouldReadTheAmountOfGpusEachTaskManagerGetsFromTheConfiguration() {
        Configuration conf = new Configuration();
        assertThat(FlinkGpus.amount(conf)).isZero();

        conf.setString("external-resource.gpu.amount", "2");
        assertThat(FlinkGpus.amount(conf)).as("gpu is not in external-resources").isZero();

        conf.setString("external-resources", "fpga;gpu");
        assertThat(FlinkGpus.amount(conf)).isEqualTo(2);

        conf.setString("external-resource.gpu.amount", "two");
        assertThatThrownBy(() -> FlinkGpus.amount(conf))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "external-resource.gpu.amount 'two' is not a number of GPUs (a whole number"
                                + " >= 0)");
    }
}
