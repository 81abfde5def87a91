package io.minato.trainer.gpu;

import ai.djl.Device;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The trainer devices from {@code --devices}: {@code cpu}, {@code cpu:N}, {@code gpu}, {@code
 * gpus:N} or {@code gpu:I,J,...}, falling back to one CPU device, with one line for the user, when
 * there is no GPU.
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

    /** The command-line option this parses, for error messages. */
    public static final String OPTION = "--devices";

    static final String FORMS =
            "cpu, cpu:N (N >= 1 replicas on the CPU), gpu (all GPUs), gpus:N (N >= 1 GPUs) or"
                    + " gpu:I,J,... (GPU indices)";

    private static final Pattern COUNT = Pattern.compile("\\d{1,9}");
    private static final String GPU_COUNT = "gpus:";
    private static final Pattern GPU_NAME = Pattern.compile("gpu:?(\\d{1,9})");
    private static final Pattern DJL_GPU_LIST = Pattern.compile("gpu\\d{1,9}(,gpu\\d{1,9})*");

    private final String spec;
    private final List<TrainingDevice> devices;
    private final String fallbackNotice;
    private final boolean fromFlink;

    private DeviceSpec(String spec, List<TrainingDevice> devices, String fallbackNotice) {
        this(spec, devices, fallbackNotice, false);
    }

    private DeviceSpec(
            String spec, List<TrainingDevice> devices, String fallbackNotice, boolean fromFlink) {
        this.spec = spec;
        this.devices = List.copyOf(devices);
        this.fallbackNotice = fallbackNotice;
        this.fromFlink = fromFlink;
    }

    /**
     * Parses {@code spec} for a job submitted to a cluster whose TaskManagers each get {@code
     * flinkGpus} GPUs from Flink's external resource framework ({@link FlinkGpus#amount}), {@code
     * clusterGpus} in all as the cluster's registered TaskManagers report (empty when it cannot
     * tell: in application mode, or before a resource manager starts TaskManagers on demand). With
     * no Flink GPUs, as {@link #parse(String)}. With some, every trainer takes its GPU from Flink
     * in its TaskManager ({@link #fromFlink()}), and no GPU of this machine is looked for, as it
     * need not be one that trains: {@code gpu} (and the default) trains on the cluster's GPUs
     * ({@code flinkGpus} where it cannot tell), {@code gpus:N} on N. {@code gpu:I,J,...} is
     * refused: Flink picks the GPUs.
     *
     * @throws IllegalArgumentException naming the spec and what to give instead
     */
    public static DeviceSpec parseForCluster(String spec, long flinkGpus, OptionalInt clusterGpus) {
        if (flinkGpus <= 0) {
            return parse(spec);
        }
        String s = spec == null ? "gpu" : spec.strip().toLowerCase(Locale.ROOT);
        if (s.isEmpty() || s.equals("gpu")) {
            long all =
                    clusterGpus.isPresent() && clusterGpus.getAsInt() > 0
                            ? clusterGpus.getAsInt()
                            : flinkGpus;
            if (all > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(
                        "external-resource.gpu.amount " + flinkGpus + " is more GPUs than can be");
            }
            return fromFlink("gpu", (int) all);
        }
        if (s.startsWith(GPU_COUNT)) {
            return fromFlink(s, gpuCount(OPTION, spec, s));
        }
        if (s.startsWith("gpu")) {
            throw invalid(
                    OPTION,
                    spec,
                    "the TaskManagers take their GPUs from Flink's external resource framework"
                            + " (external-resource.gpu.amount: "
                            + flinkGpus
                            + " each), which picks them; give gpu to train on all the cluster's"
                            + " GPUs, gpus:N to train on N, or cpu / cpu:N");
        }
        return parse(spec);
    }

    private static DeviceSpec fromFlink(String spec, int count) {
        return new DeviceSpec(
                spec, IntStream.range(0, count).mapToObj(TrainingDevice::gpu).toList(), "", true);
    }

    private static int gpuCount(String option, String spec, String s) {
        String n = s.substring(GPU_COUNT.length()).strip();
        if (!COUNT.matcher(n).matches() || Integer.parseInt(n) < 1) {
            throw invalid(option, spec, "N must be a whole number >= 1, got '" + n + "'");
        }
        return Integer.parseInt(n);
    }

    /** Parses {@code spec} against the GPUs {@link GpuProbe} finds; null or blank: the default. */
    public static DeviceSpec parse(String spec) {
        return parse(spec, GpuProbe::detect);
    }

    /** As {@link #parse(String)}, for a command whose option is named {@code option}. */
    public static DeviceSpec parse(String spec, String option) {
        return parse(spec, GpuProbe::detect, option);
    }

    /**
     * Parses {@code spec} against the GPUs {@code probe} reports; the probe is asked only when the
     * spec needs GPUs, so {@code cpu} never loads CUDA. Null or blank: {@code gpu} if one is
     * present, else {@code cpu}, with no notice.
     *
     * @throws IllegalArgumentException naming the spec and the accepted forms
     */
    public static DeviceSpec parse(String spec, Supplier<Gpus> probe) {
        return parse(spec, probe, OPTION);
    }

    private static DeviceSpec parse(String spec, Supplier<Gpus> probe, String option) {
        if (spec == null || spec.isBlank()) {
            Gpus gpus = probe.get();
            return gpus.present() ? allGpus("gpu", gpus) : new DeviceSpec("cpu", cpus(1), "");
        }
        String s = spec.strip().toLowerCase(Locale.ROOT);
        if (DJL_GPU_LIST.matcher(s).matches()) {
            // DJL's own spelling, gpu0 or gpu0,gpu1: the same as gpu:0 / gpu:0,1.
            s = "gpu:" + s.replace("gpu", "");
        }
        if (s.equals("cpu")) {
            return new DeviceSpec(s, cpus(1), "");
        }
        if (s.startsWith("cpu:")) {
            String n = s.substring("cpu:".length()).strip();
            if (!COUNT.matcher(n).matches() || Integer.parseInt(n) < 1) {
                throw invalid(option, spec, "N must be a whole number >= 1, got '" + n + "'");
            }
            return new DeviceSpec(s, cpus(Integer.parseInt(n)), "");
        }
        if (s.equals("gpu")) {
            Gpus gpus = probe.get();
            return gpus.present() ? allGpus(s, gpus) : fallback(spec, gpus);
        }
        if (s.startsWith(GPU_COUNT)) {
            int n = gpuCount(option, spec, s);
            Gpus gpus = probe.get();
            if (!gpus.present()) {
                return fallback(spec, gpus);
            }
            if (gpus.count() < n) {
                throw invalid(
                        option, spec, "this machine has " + gpus.count() + " GPU(s), not " + n);
            }
            return new DeviceSpec(
                    s,
                    gpus.list().stream().limit(n).map(g -> TrainingDevice.gpu(g.index())).toList(),
                    "");
        }
        if (s.startsWith("gpu:")) {
            // Syntax first, so a typo is reported the same on machines with and without a GPU.
            List<Integer> indices = indices(option, spec, s.substring("gpu:".length()));
            Gpus gpus = probe.get();
            if (!gpus.present()) {
                return fallback(spec, gpus);
            }
            List<TrainingDevice> chosen = new ArrayList<>();
            for (int i : indices) {
                if (gpus.get(i).isEmpty()) {
                    throw invalid(
                            option,
                            spec,
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
        throw invalid(option, spec, "unknown device kind");
    }

    /**
     * A DJL device from a device name as the job passes it on ({@code cpu}, {@code gpu:N}) or as
     * DJL spells it ({@code gpuN}). DJL's {@code Device.fromName} refuses {@code gpu:0}.
     *
     * @throws IllegalArgumentException naming the device and the accepted forms
     */
    public static Device djlDevice(String name) {
        String s = name.strip().toLowerCase(Locale.ROOT);
        if (s.equals("cpu")) {
            return Device.cpu();
        }
        Matcher m = GPU_NAME.matcher(s);
        if (m.matches()) {
            return Device.gpu(Integer.parseInt(m.group(1)));
        }
        throw new IllegalArgumentException(
                "unknown device name '" + name + "': expected cpu, gpu:N or gpuN");
    }

    /** The device DJL should put replica {@code device}'s model and batches on. */
    public static Device djlDevice(TrainingDevice device) {
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
        return fromFlink;
    }

    /** The device name each trainer is created with, for {@code DjlAccelerator.Factory}. */
    public List<String> names() {
        return devices.stream()
                .map(
                        d ->
                                fromFlink
                                        ? FlinkGpus.DEVICE_NAME
                                        : d.isGpu() ? "gpu:" + d.index() : "cpu")
                .toList();
    }

    /** The line to print when a GPU spec fell back to the CPU; empty otherwise. */
    public Optional<String> fallbackNotice() {
        return fallbackNotice.isEmpty() ? Optional.empty() : Optional.of(fallbackNotice);
    }

    @Override
    public String toString() {
        return spec + " -> " + devices;
    }

    private static List<Integer> indices(String option, String spec, String list) {
        Set<Integer> seen = new LinkedHashSet<>();
        for (String part : list.split(",", -1)) {
            String p = part.strip();
            if (!COUNT.matcher(p).matches()) {
                throw invalid(option, spec, "'" + p + "' is not a GPU index (0, 1, ...)");
            }
            if (!seen.add(Integer.parseInt(p))) {
                throw invalid(option, spec, "GPU " + p + " is listed twice");
            }
        }
        return new ArrayList<>(seen);
    }

    private static DeviceSpec allGpus(String spec, Gpus gpus) {
        return new DeviceSpec(
                spec, gpus.list().stream().map(g -> TrainingDevice.gpu(g.index())).toList(), "");
    }

    private static DeviceSpec fallback(String spec, Gpus gpus) {
        String line =
                "no GPU ("
                        + gpus.cause()
                        + "): running on 1 cpu device instead of '"
                        + spec.strip()
                        + "'";
        return new DeviceSpec("cpu", cpus(1), line);
    }

    private static List<TrainingDevice> cpus(int n) {
        return IntStream.range(0, n).mapToObj(TrainingDevice::cpu).toList();
    }

    private static IllegalArgumentException invalid(String option, String spec, String problem) {
        return new IllegalArgumentException(
                option + " '" + spec.strip() + "': " + problem + "; expected " + FORMS);
    }
}
