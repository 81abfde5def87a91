package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.TaskManagerOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TorchThreadsTest {

    @ParameterizedTest(name = "{0} cores, {1} slots, {2} devices: {3} threads each")
    @CsvSource({
        // The embedded run on 2 cores: one trainer gets both, two get one each.
        "2, 2, 1, 2",
        "2, 2, 2, 1",
        // MinatoLoader's server: 80 cores, a slot per core, 8 devices.
        "80, 80, 8, 10",
        // Trainers are at most one per slot: one slot, one trainer, whatever the devices.
        "4, 1, 8, 4",
        "16, 3, 8, 5",
        // Three TaskManagers sharing a 2-core host each declare 0.67 cores: still one thread.
        "0.67, 1, 2, 1",
        "1.5, 1, 1, 1",
    })
    void shouldShareTheTaskManagersCoresAmongTheTrainersItCanHold(
            double cores, int slots, int devices, int threads) {
        assertThat(TorchThreads.perTrainer(cores, slots, devices)).isEqualTo(threads);
    }

    @Test
    void shouldReadTheCoresAndSlotsFromTheTaskManagersConfiguration() {
        Configuration declared = new Configuration();
        declared.set(TaskManagerOptions.CPU_CORES, 1.0);
        declared.set(TaskManagerOptions.NUM_TASK_SLOTS, 4);
        assertThat(TorchThreads.perTrainer(declared, 2)).isEqualTo(1);

        // A MiniCluster's TaskManager declares a million cores: the JVM's own are the limit.
        int usable = Runtime.getRuntime().availableProcessors();
        Configuration local = new Configuration();
        local.set(TaskManagerOptions.CPU_CORES, 1_000_000.0);
        local.set(TaskManagerOptions.NUM_TASK_SLOTS, 1);
        assertThat(TorchThreads.perTrainer(local, 1)).isEqualTo(usable);

        Configuration undeclared = new Configuration();
        undeclared.set(TaskManagerOptions.NUM_TASK_SLOTS, 1);
        assertThat(TorchThreads.perTrainer(undeclared, 1)).isEqualTo(usable);
    }

    @Test
    void shouldRefuseATaskManagerWithoutCoresOrSlots() {
        assertThatThrownBy(() -> TorchThreads.perTrainer(0, 1, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0.0 cores");
        assertThatThrownBy(() -> TorchThreads.perTrainer(2, 0, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0 slots");
    }
}
