package io.minato.trainer.gpu;

import ai.djl.Device;
import ai.djl.engine.Engine;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The trainer devices a {@link DeviceRequest} ({@code --devices}) comes to on this machine or on a
 * cluster: one {@link TrainingDevice} per trainer replica, falling back to one CPU device, with one
 * line for the user, when there is no GPU.
 *
 * <p>DJL and CUDA: {@link #djlDevice} hands DJL a {@code Device.gpu(i)}, which runs on the GPU only
 * with a CUDA build of libtorch, and DJL prefers the {@code pytorch-native-cpu} jar we bundle. Two
 * ways to point it at CUDA (DJL 0.35.1 / PyTorch 2.7.1, whose {@code pytorch-jni} ships the JNI for
 * flavour {@code cu128}):
 *
 * <ul>
 *   <li>online: leave {@code pytorch-native-cpu} off the runtime classpath and {@code
 *       ai.djl.offline} unset; DJL detects the CUDA version and downloads the matching libtorch
 *       into {@code ~/.djl.ai} on first use ({@code PYTORCH_FLAVOR=cu128} forces the flavour);
 *   <li>offline: unpack a libtorch 2.7.1 CUDA 12.8 build (or pip's {@code torch==2.7.1+cu128}) and
 *       set {@code PYTORCH_LIBRARY_PATH} to its {@code lib} folder, with {@code
 *       PYTORCH_VERSION=2.7.1} and {@code PYTORCH_FLAVOR=cu128} (else DJL derives the flavour from
 *       the driver's CUDA version and looks for a JNI it may not have).
 * </ul>
 *
 * On a machine without a usable GPU DJL logs "Failed to detect GPU count" and quietly runs on the
 * CPU, which is why we ask NVML first instead of trusting DJL's device list.
 */
public final class DeviceSpec {

    private final String spec;
    private final List<TrainingDevice> devices;
    private final String fallbackNotice;

    private DeviceSpec(String spec, List<TrainingDevice> devices, String fallbackNotice) {
        this.spec = spec;
        this.devices = List.copyOf(devices);
        this.fallbackNotice = fallbackNotice;
    }

    /**
     * The devices {@code request} asks for on a job submitted to a cluster whose TaskManagers each
     * get {@code flinkGpus} GPUs from Flink's external resource framework ({@link
     * FlinkGpus#amount}), {@code clusterGpus} in all as the cluster's registered TaskManagers
     * report (empty when it cannot tell: in application mode, or before a resource manager starts
     * TaskManagers on demand). With no Flink GPUs, as {@link #resolve(DeviceRequest)}. With some,
     * every trainer takes its GPU from Flink in its TaskManager ({@link #fromFlink()}), and no GPU
     * of this machine is looked for, as it need not be one that trains: {@code gpu} (and the
     * default) trains on the cluster's GPUs ({@code flinkGpus} where it cannot tell), {@code
     * gpus:N} on N. {@code gpu:I,J,...} is refused: Flink picks the GPUs.
     *
     * @throws IllegalArgumentException naming the request and what to give instead
     */
    public static DeviceSpec resolveForCluster(
            DeviceRequest request, long flinkGpus, OptionalInt clusterGpus) {
        if (flinkGpus <= 0) {
            return resolve(request);
        }
        switch (request.form()) {
            case DEFAULT, ALL_GPUS -> {
                long all =
                        clusterGpus.isPresent() && clusterGpus.getAsInt() > 0
                                ? clusterGpus.getAsInt()
                                : flinkGpus;
                if (all > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException(
                            "external-resource.gpu.amount "
                                    + flinkGpus
                                    + " is more GPUs than can be");
                }
                return fromFlink("gpu", (int) all);
            }
            case GPU_COUNT -> {
                return fromFlink(request.spec(), request.count());
            }
            case GPU_INDICES ->
                    throw request.invalid(
                            "the TaskManagers take their GPUs from Flink's external resource"
                                    + " framework (external-resource.gpu.amount: "
                                    + flinkGpus
                                    + " each), which picks them; give gpu to train on all the"
                                    + " cluster's GPUs, gpus:N to train on N, or cpu / cpu:N");
            default -> {
                return resolve(request);
            }
        }
    }

    private static DeviceSpec fromFlink(String spec, int count) {
        return new DeviceSpec(
                spec, IntStream.range(0, count).mapToObj(TrainingDevice::flinkGpu).toList(), "");
    }

    /** The devices {@code request} asks for on this machine, whose GPUs NVML reports. */
    public static DeviceSpec resolve(DeviceRequest request) {
        return resolve(request, GpuProbe::detect);
    }

    /**
     * As {@link #resolve(DeviceRequest)}, with the GPUs {@code probe} reports (asked only when the
     * request may take a GPU).
     */
    public static DeviceSpec resolve(DeviceRequest request, Supplier<Gpus> probe) {
        String s = request.spec();
        switch (request.form()) {
            case DEFAULT -> {
                Gpus gpus = probe.get();
                return gpus.present() ? allGpus("gpu", gpus) : cpus(1);
            }
            case CPU -> {
                return new DeviceSpec(s, cpuList(request.count()), "");
            }
            case ALL_GPUS -> {
                Gpus gpus = probe.get();
                return gpus.present() ? allGpus(s, gpus) : fallback(request, gpus);
            }
            case GPU_COUNT -> {
                int n = request.count();
                Gpus gpus = probe.get();
                if (!gpus.present()) {
                    return fallback(request, gpus);
                }
                if (gpus.count() < n) {
                    throw request.invalid("this machine has " + gpus.count() + " GPU(s), not " + n);
                }
                return new DeviceSpec(
                        s,
                        gpus.list().stream()
                                .limit(n)
                                .map(g -> TrainingDevice.gpu(g.index()))
                                .toList(),
                        "");
            }
            default -> {
                Gpus gpus = probe.get();
                if (!gpus.present()) {
                    return fallback(request, gpus);
                }
                List<TrainingDevice> chosen = new ArrayList<>();
                for (int i : request.indices()) {
                    if (gpus.get(i).isEmpty()) {
                        throw request.invalid(
                                "there is no GPU "
                                        + i
                                        + "; this machine has "
                                        + gpus.count()
                                        + " ("
                                        + gpus.list().stream()
                                                .map(g -> "gpu:" + g.index())
                                                .collect(Collectors.joining(", "))
                                        + ")");
                    }
                    chosen.add(TrainingDevice.gpu(i));
                }
                return new DeviceSpec(s, chosen, "");
            }
        }
    }

    /** {@code n} trainer replicas on the CPU. */
    public static DeviceSpec cpus(int n) {
        return new DeviceSpec(n == 1 ? "cpu" : "cpu:" + n, cpuList(n), "");
    }

    /** The GPUs DJL's PyTorch engine sees in this JVM (0 with the bundled CPU build). */
    public static int torchGpus() {
        return Engine.getEngine("PyTorch").getGpuCount();
    }

    /** The DJL device of a trainer on this host ({@code FLINK_GPU} is its TaskManager's to say). */
    public static Device djlDevice(TrainingDevice device) {
        if (device.kind() == TrainingDevice.Kind.FLINK_GPU) {
            throw new IllegalArgumentException(
                    device + " is the GPU Flink gives a trainer's TaskManager, known only there");
        }
        return device.isGpu() ? Device.gpu(device.index()) : Device.cpu();
    }

    /** The spec as understood (lower case; {@code cpu} or {@code gpu} for the default). */
    public String spec() {
        return spec;
    }

    /** One trainer replica per entry, in replica order. */
    public List<TrainingDevice> devices() {
        return devices;
    }

    /**
     * Whether each GPU is the one Flink's external resource framework gives the trainer's
     * TaskManager ({@link FlinkGpus}), resolved there; the indices then only number the trainers.
     */
    public boolean fromFlink() {
        return devices.stream().anyMatch(d -> d.kind() == TrainingDevice.Kind.FLINK_GPU);
    }

    /** The line that says the GPUs asked for are not there and what runs instead; empty if none. */
    public Optional<String> fallbackNotice() {
        return fallbackNotice.isEmpty() ? Optional.empty() : Optional.of(fallbackNotice);
    }

    @Override
    public String toString() {
        return spec + " -> " + devices;
    }

    private static DeviceSpec allGpus(String spec, Gpus gpus) {
        return new DeviceSpec(
                spec, gpus.list().stream().map(g -> TrainingDevice.gpu(g.index())).toList(), "");
    }

    private static DeviceSpec fallback(DeviceRequest request, Gpus gpus) {
        String line =
                "no GPU ("
                        + gpus.cause()
                        + "): running on 1 cpu device instead of '"
                        + request.text().strip()
                        + "'";
        return new DeviceSpec("cpu", cpuList(1), line);
    }

    private static List<TrainingDevice> cpuList(int n) {
        return IntStream.range(0, n).mapToObj(TrainingDevice::cpu).toList();
    }
}
