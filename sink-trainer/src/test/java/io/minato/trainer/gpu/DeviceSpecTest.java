package io.minato.trainer.gpu;

import static io.minato.trainer.gpu.TrainingDevice.cpu;
import static io.minato.trainer.gpu.TrainingDevice.gpu;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Device;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DeviceSpecTest {

    private static final Gpus TWO_GPUS =
            Gpus.found(
                    List.of(
                            new Gpu(0, "NVIDIA H100", 80L << 30),
                            new Gpu(1, "NVIDIA H100", 80L << 30)));

    private static final Gpus NO_GPU =
            Gpus.none(
                    "CUDA/NVML libraries not found",
                    "UnsatisfiedLinkError: no jnicudart in java.library.path");

    private static DeviceSpec parse(String spec, Gpus gpus) {
        return DeviceSpec.resolve(DeviceRequest.parse(spec), () -> gpus);
    }

    private static DeviceSpec forCluster(String spec, long flinkGpus, OptionalInt clusterGpus) {
        return DeviceSpec.resolveForCluster(DeviceRequest.parse(spec), flinkGpus, clusterGpus);
    }

    @Test
    void shouldRunOneCpuReplicaForCpu() {
        DeviceSpec spec = parse("cpu", TWO_GPUS);

        assertThat(spec.devices()).containsExactly(cpu(0));
        assertThat(spec.fallbackNotice()).isEmpty();
    }

    @Test
    void shouldAcceptDjlsSpellingOfGpusAsWellAsOurs() {
        assertThat(parse("gpu1", TWO_GPUS).devices()).containsExactly(gpu(1));
        assertThat(parse("gpu1,gpu0", TWO_GPUS).devices()).containsExactly(gpu(1), gpu(0));
        assertThat(parse("GPU:0,1", TWO_GPUS).devices()).containsExactly(gpu(0), gpu(1));
        assertThat(parse("gpu0", NO_GPU).devices()).containsExactly(cpu(0));
    }

    @Test
    void shouldRunNCpuReplicasForCpuN() {
        assertThat(parse("cpu:3", NO_GPU).devices()).containsExactly(cpu(0), cpu(1), cpu(2));
        assertThat(parse(" CPU:2 ", NO_GPU).devices()).containsExactly(cpu(0), cpu(1));
    }

    @Test
    void shouldNotProbeForGpusWhenTheSpecIsCpu() {
        AtomicInteger probes = new AtomicInteger();
        Supplier<Gpus> counting =
                () -> {
                    probes.incrementAndGet();
                    return TWO_GPUS;
                };

        DeviceSpec.resolve(DeviceRequest.parse("cpu"), counting);
        DeviceSpec.resolve(DeviceRequest.parse("cpu:4"), counting);

        assertThat(probes).hasValue(0);
    }

    @Test
    void shouldUseEveryDetectedGpuForGpu() {
        DeviceSpec spec = parse("gpu", TWO_GPUS);

        assertThat(spec.devices()).containsExactly(gpu(0), gpu(1));
        assertThat(spec.fallbackNotice()).isEmpty();
    }

    @Test
    void shouldUseTheListedGpusInTheGivenOrder() {
        assertThat(parse("gpu:1", TWO_GPUS).devices()).containsExactly(gpu(1));
        assertThat(parse("gpu:1, 0", TWO_GPUS).devices()).containsExactly(gpu(1), gpu(0));
    }

    @Test
    void shouldFallBackToOneCpuWithOneClearLineWhenThereIsNoGpu() {
        DeviceSpec spec = parse("gpu", NO_GPU);

        assertThat(spec.devices()).containsExactly(cpu(0));
        assertThat(spec.spec()).isEqualTo("cpu");
        assertThat(spec.fallbackNotice())
                .contains(
                        "no GPU (CUDA/NVML libraries not found): running on 1 cpu device instead"
                                + " of 'gpu'");
    }

    @Test
    void shouldFallBackForAGpuListToo() {
        DeviceSpec spec = parse("gpu:0,1", Gpus.none("NVML found 0 devices", ""));

        assertThat(spec.devices()).containsExactly(cpu(0));
        assertThat(spec.fallbackNotice())
                .contains(
                        "no GPU (NVML found 0 devices): running on 1 cpu device instead of"
                                + " 'gpu:0,1'");
    }

    @Test
    void shouldDefaultToAllGpusWhenPresentAndSilently() {
        for (String none : new String[] {null, "", "  "}) {
            DeviceSpec spec = parse(none, TWO_GPUS);
            assertThat(spec.devices()).containsExactly(gpu(0), gpu(1));
            assertThat(spec.fallbackNotice()).isEmpty();
        }
    }

    @Test
    void shouldDefaultToOneCpuWithoutGpuAndSilently() {
        DeviceSpec spec = parse(null, NO_GPU);

        assertThat(spec.devices()).containsExactly(cpu(0));
        assertThat(spec.spec()).isEqualTo("cpu");
        assertThat(spec.fallbackNotice()).isEmpty();
    }

    @Test
    void shouldNameAGpuThatIsNotPresentAndTheOnesThatAre() {
        assertThatThrownBy(() -> parse("gpu:3", TWO_GPUS))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(
                        "--devices 'gpu:3': there is no GPU 3; this machine has 2 (gpu:0, gpu:1);"
                                + " expected cpu, cpu:N");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpu:x", "gpu:", "gpu:0,", "gpu:-1", "gpu:1,1"})
    void shouldRejectMalformedGpuListsEvenWithoutGpu(String bad) {
        for (Gpus gpus : List.of(TWO_GPUS, NO_GPU)) {
            assertThatThrownBy(() -> parse(bad, gpus))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("--devices '" + bad + "': ")
                    .hasMessageContaining("expected " + DeviceRequest.FORMS)
                    .hasMessageNotContaining("\n");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"cpu:0", "cpu:x", "cpu:", "cpu:-2", "tpu", "cuda", "gpus", "cpu0"})
    void shouldRejectOtherBadSpecsNamingTheSpecAndTheAcceptedForms(String bad) {
        assertThatThrownBy(() -> parse(bad, TWO_GPUS))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--devices '" + bad + "': ")
                .hasMessageEndingWith(
                        "expected cpu, cpu:N (N >= 1 replicas on the CPU), gpu (all GPUs), gpus:N"
                                + " (N >= 1 GPUs) or gpu:I,J,... (GPU indices)");
    }

    @Test
    void shouldMapDevicesToDjlDevices() {
        assertThat(DeviceSpec.djlDevice(gpu(1))).isEqualTo(Device.gpu(1));
        assertThat(DeviceSpec.djlDevice(cpu(0))).isEqualTo(Device.cpu());
        assertThat(DeviceSpec.djlDevice(cpu(3))).isEqualTo(Device.cpu());
    }

    @Test
    void shouldFallBackOnThisMachineWhenAskedForGpus() {
        GpuProbeTest.assumeNoNvidiaDriver();
        DeviceSpec spec = DeviceSpec.resolve(DeviceRequest.parse("gpu"));

        assertThat(spec.devices()).containsExactly(cpu(0));
        assertThat(spec.fallbackNotice())
                .contains(
                        "no GPU (CUDA/NVML libraries not found): running on 1 cpu device instead"
                                + " of 'gpu'");
    }

    @Test
    void shouldTakeTheFirstNGpusForGpusN() {
        assertThat(parse("gpus:1", TWO_GPUS).devices()).containsExactly(gpu(0));
        assertThat(parse(" GPUS:2 ", TWO_GPUS).devices()).containsExactly(gpu(0), gpu(1));
        assertThat(parse("gpus:2", NO_GPU).devices()).containsExactly(cpu(0));
        assertThat(parse("gpus:2", NO_GPU).fallbackNotice()).isPresent();
        assertThatThrownBy(() -> parse("gpus:3", TWO_GPUS))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--devices 'gpus:3': this machine has 2 GPU(s), not 3;");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpus:0", "gpus:x", "gpus:", "gpus:-1", "gpus:1,2"})
    void shouldRejectMalformedGpuCountsEvenWithoutGpu(String bad) {
        for (Gpus gpus : List.of(TWO_GPUS, NO_GPU)) {
            assertThatThrownBy(() -> parse(bad, gpus))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("--devices '" + bad + "': N must be a whole number")
                    .hasMessageNotContaining("\n");
        }
        assertThatThrownBy(() -> forCluster(bad, 2, OptionalInt.of(4)))
                .hasMessageStartingWith("--devices '" + bad + "': N must be a whole number");
    }

    @Test
    void shouldTakeEveryGpuOfTheClusterForGpuOrTheDefaultOnACluster() {
        for (String spec : new String[] {"gpu", null, " GPU "}) {
            DeviceSpec d = forCluster(spec, 2, OptionalInt.of(6));

            assertThat(d.fromFlink()).isTrue();
            assertThat(d.devices()).hasSize(6);
            assertThat(d.devices()).allMatch(x -> x.kind() == TrainingDevice.Kind.FLINK_GPU);
            assertThat(d.fallbackNotice()).isEmpty();
        }
        // In application mode no TaskManager is there to count: one TaskManager's amount.
        assertThat(forCluster("gpu", 2, OptionalInt.empty()).devices())
                .containsExactly(TrainingDevice.flinkGpu(0), TrainingDevice.flinkGpu(1));
        assertThat(forCluster("gpu", 2, OptionalInt.of(0)).devices())
                .as("the TaskManagers have none: the client says so")
                .hasSize(2);
    }

    @Test
    void shouldTrainOnNOfFlinksGpusForGpusNOnACluster() {
        DeviceSpec d = forCluster("gpus:3", 1, OptionalInt.empty());

        assertThat(d.fromFlink()).isTrue();
        assertThat(d.devices())
                .containsExactly(
                        TrainingDevice.flinkGpu(0),
                        TrainingDevice.flinkGpu(1),
                        TrainingDevice.flinkGpu(2));
        assertThat(d.spec()).isEqualTo("gpus:3");
    }

    @Test
    void shouldKeepCpuSpecsOnAClusterWithFlinkGpus() {
        DeviceSpec d = forCluster("cpu:2", 4, OptionalInt.of(8));

        assertThat(d.fromFlink()).isFalse();
        assertThat(d.devices()).containsExactly(cpu(0), cpu(1));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpu:0", "gpu1", "gpu:0,1"})
    void shouldRefuseGpuIndicesWhenFlinkPicksTheGpus(String spec) {
        assertThatThrownBy(() -> forCluster(spec, 2, OptionalInt.of(4)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(
                        "--devices '" + spec + "': the TaskManagers take their GPUs")
                .hasMessageContaining("external-resource.gpu.amount: 2 each")
                .hasMessageContaining(
                        "give gpu to train on all the cluster's GPUs, gpus:N to train on N");
    }

    @Test
    void shouldParseAsOnThisMachineWithoutFlinkGpus() {
        DeviceSpec d = forCluster("cpu", 0, OptionalInt.empty());

        assertThat(d.fromFlink()).isFalse();
        assertThat(d.devices()).containsExactly(cpu(0));
        assertThat(parse("gpu:1,0", TWO_GPUS).devices()).containsExactly(gpu(1), gpu(0));
    }
}
