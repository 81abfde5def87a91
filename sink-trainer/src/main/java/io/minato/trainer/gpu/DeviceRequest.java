package io.minato.trainer.gpu;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What {@code --devices} asks for, parsed once where the option is read: the form and its number or
 * GPU indices, with no look at the machine. {@link DeviceSpec} resolves it against this machine's
 * GPUs or a cluster's. A malformed value is refused here, in one line naming the option, the value
 * and the forms it takes, the same on a machine with or without a GPU.
 *
 * @param text the value as given, for messages (empty: not given)
 * @param option the option it was given to, for messages
 * @param count the N of {@code cpu:N} and {@code gpus:N}; 1 for {@code cpu}; 0 otherwise
 * @param indices the GPU indices of {@code gpu:I,J,...}, in the order given; empty otherwise
 */
public record DeviceRequest(
        String text, String option, Form form, int count, List<Integer> indices) {

    /** The forms {@code --devices} takes. */
    public enum Form {
        /** Not given: every GPU there is, else one CPU device. */
        DEFAULT,
        /** {@code cpu} or {@code cpu:N}: N trainer replicas on the CPU. */
        CPU,
        /** {@code gpu}: every GPU. */
        ALL_GPUS,
        /** {@code gpus:N}: the first N GPUs. */
        GPU_COUNT,
        /** {@code gpu:I,J,...} (or DJL's {@code gpuI,gpuJ}): those GPUs, in that order. */
        GPU_INDICES
    }

    /** The option this parses, for messages. */
    public static final String OPTION = "--devices";

    static final String FORMS =
            "cpu, cpu:N (N >= 1 replicas on the CPU), gpu (all GPUs), gpus:N (N >= 1 GPUs) or"
                    + " gpu:I,J,... (GPU indices)";

    private static final Pattern COUNT = Pattern.compile("\\d{1,9}");
    private static final Pattern DJL_GPU_LIST = Pattern.compile("gpu\\d{1,9}(,gpu\\d{1,9})*");

    public DeviceRequest {
        indices = List.copyOf(indices);
    }

    /** Parses a value of {@code --devices}; null or blank is the default. */
    public static DeviceRequest parse(String text) {
        return parse(text, OPTION);
    }

    /** As {@link #parse(String)}, for an option of another name. */
    public static DeviceRequest parse(String text, String option) {
        if (text == null || text.isBlank()) {
            return new DeviceRequest("", option, Form.DEFAULT, 0, List.of());
        }
        String s = text.strip().toLowerCase(Locale.ROOT);
        if (DJL_GPU_LIST.matcher(s).matches()) {
            // DJL's own spelling, gpu0 or gpu0,gpu1: the same as gpu:0 / gpu:0,1.
            s = "gpu:" + s.replace("gpu", "");
        }
        if (s.equals("cpu")) {
            return new DeviceRequest(text, option, Form.CPU, 1, List.of());
        }
        if (s.startsWith("cpu:")) {
            return new DeviceRequest(
                    text, option, Form.CPU, count(text, option, s, "cpu:"), List.of());
        }
        if (s.equals("gpu")) {
            return new DeviceRequest(text, option, Form.ALL_GPUS, 0, List.of());
        }
        if (s.startsWith("gpus:")) {
            return new DeviceRequest(
                    text, option, Form.GPU_COUNT, count(text, option, s, "gpus:"), List.of());
        }
        if (s.startsWith("gpu:")) {
            return new DeviceRequest(
                    text,
                    option,
                    Form.GPU_INDICES,
                    0,
                    indices(text, option, s.substring("gpu:".length())));
        }
        throw invalid(option, text, "unknown device kind");
    }

    /** Whether it names GPUs of this host by index (which a cluster's Flink picks instead). */
    public boolean namesGpus() {
        return form == Form.GPU_INDICES;
    }

    /** How the devices are named in messages: the value as given, or the default's name. */
    public String spec() {
        return text.isEmpty() ? "gpu" : text.strip().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return text.isEmpty() ? "(default)" : text;
    }

    /** An error of this value: the option, the value, the problem and the forms it takes. */
    IllegalArgumentException invalid(String problem) {
        return invalid(option, text, problem);
    }

    private static int count(String text, String option, String s, String prefix) {
        String n = s.substring(prefix.length()).strip();
        if (!COUNT.matcher(n).matches() || Integer.parseInt(n) < 1) {
            throw invalid(option, text, "N must be a whole number >= 1, got '" + n + "'");
        }
        return Integer.parseInt(n);
    }

    private static List<Integer> indices(String text, String option, String list) {
        Set<Integer> seen = new LinkedHashSet<>();
        for (String part : list.split(",", -1)) {
            String p = part.strip();
            if (!COUNT.matcher(p).matches()) {
                throw invalid(option, text, "'" + p + "' is not a GPU index (0, 1, ...)");
            }
            if (!seen.add(Integer.parseInt(p))) {
                throw invalid(option, text, "GPU " + p + " is listed twice");
            }
        }
        return List.copyOf(seen);
    }

    private static IllegalArgumentException invalid(String option, String text, String problem) {
        return new IllegalArgumentException(
                option + " '" + text.strip() + "': " + problem + "; expected " + FORMS);
    }
}
