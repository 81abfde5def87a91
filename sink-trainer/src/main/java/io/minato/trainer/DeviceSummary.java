package io.minato.trainer;

import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one trainer sink subtask did, written as {@code summary-device-<d>.json} at the end for the
 * job driver's report. Losses are {@code NaN} (JSON null) when the accelerator reports none; step
 * times are epoch millis, 0 when no step ran (the first epoch's end: 0 when no epoch-0 sample was
 * trained here).
 *
 * <p>{@code gpu} holds the readings of the device's GPU (JSON {@code gpu_samples}, {@code
 * gpu_util_mean_percent}, {@code gpu_mem_peak_bytes}, {@code gpu_mem_total_bytes}); null, and those
 * fields JSON null, without a GPU or before its first reading. Unlike the counters, which ride in
 * checkpoints, they cover the writer's lifetime since its last (re)start only, idle time included.
 */
public record DeviceSummary(
        int device,
        String accelerator,
        long steps,
        long samples,
        long fast,
        long slow,
        double busySeconds,
        double waitSeconds,
        double headOfLineSeconds,
        double firstLoss,
        double lastLoss,
        long firstStepStartMillis,
        long lastStepEndMillis,
        long firstEpochEndMillis,
        long samplesAtFirstEpochEnd,
        GpuStats gpu) {

    /**
     * @param gpu the GPU's readings; null without a GPU or reading
     */
    public static DeviceSummary of(int device, String accelerator, DeviceCounters c, GpuStats gpu) {
        return new DeviceSummary(
                device,
                accelerator,
                c.steps(),
                c.samples(),
                c.fast(),
                c.slow(),
                c.busyNanos() / 1e9,
                c.waitNanos() / 1e9,
                c.headOfLineNanos() / 1e9,
                c.firstLoss(),
                c.lastLoss(),
                c.firstStepStartMillis(),
                c.lastStepEndMillis(),
                c.firstEpochEndMillis(),
                c.samplesAtFirstEpochEnd(),
                gpu);
    }

    /** Where device {@code device}'s summary lives in the output directory {@code dir}. */
    public static Path file(Path dir, int device) {
        return dir.resolve("summary-device-" + device + ".json");
    }

    public String toJson() {
        return "{\"device\": "
                + device
                + ", \"accelerator\": "
                + Json.quote(accelerator)
                + ", \"steps\": "
                + steps
                + ", \"samples\": "
                + samples
                + ", \"fast\": "
                + fast
                + ", \"slow\": "
                + slow
                + ", \"busy_s\": "
                + Json.number(busySeconds)
                + ", \"wait_s\": "
                + Json.number(waitSeconds)
                + ", \"head_of_line_s\": "
                + Json.number(headOfLineSeconds)
                + ", \"loss_first\": "
                + Json.number(firstLoss)
                + ", \"loss_last\": "
                + Json.number(lastLoss)
                + ", \"first_step_start_ms\": "
                + firstStepStartMillis
                + ", \"last_step_end_ms\": "
                + lastStepEndMillis
                + ", \"first_epoch_end_ms\": "
                + firstEpochEndMillis
                + ", \"samples_at_first_epoch_end\": "
                + samplesAtFirstEpochEnd
                + ", \"gpu_samples\": "
                + (gpu == null ? "null" : gpu.samples())
                + ", \"gpu_util_mean_percent\": "
                + (gpu == null ? "null" : Json.number(gpu.utilizationMeanPercent()))
                + ", \"gpu_mem_peak_bytes\": "
                + (gpu == null ? "null" : gpu.memoryPeakBytes())
                + ", \"gpu_mem_total_bytes\": "
                + (gpu == null ? "null" : gpu.memoryTotalBytes())
                + "}\n";
    }

    /** Writes this summary to {@code dir}, atomically: the driver never reads half a file. */
    public Path write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Path target = file(dir, device);
        Path tmp = Files.createTempFile(dir, target.getFileName().toString(), ".tmp");
        try {
            Files.writeString(tmp, toJson(), StandardCharsets.UTF_8);
            Files.move(
                    tmp,
                    target,
                    StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
        return target;
    }

    /**
     * Reads a summary file; a malformed one gets an IOException naming the file and the problem.
     */
    public static DeviceSummary read(Path file) throws IOException {
        Map<String, Object> m;
        try {
            m = Json.parseFlatObject(Files.readString(file, StandardCharsets.UTF_8));
            return new DeviceSummary(
                    (int) Json.integer(m, "device"),
                    Json.string(m, "accelerator"),
                    Json.integer(m, "steps"),
                    Json.integer(m, "samples"),
                    Json.integer(m, "fast"),
                    Json.integer(m, "slow"),
                    Json.decimal(m, "busy_s"),
                    Json.decimal(m, "wait_s"),
                    Json.decimal(m, "head_of_line_s"),
                    Json.decimal(m, "loss_first"),
                    Json.decimal(m, "loss_last"),
                    Json.integer(m, "first_step_start_ms"),
                    Json.integer(m, "last_step_end_ms"),
                    Json.integer(m, "first_epoch_end_ms"),
                    Json.integer(m, "samples_at_first_epoch_end"),
                    gpu(m));
        } catch (IllegalArgumentException e) {
            throw new IOException("bad device summary " + file + ": " + e.getMessage(), e);
        }
    }

    /** The GPU fields: all null, or a sample count with the statistics. */
    private static GpuStats gpu(Map<String, Object> m) {
        if (Json.isNull(m, "gpu_samples")) {
            for (String key :
                    new String[] {
                        "gpu_util_mean_percent", "gpu_mem_peak_bytes", "gpu_mem_total_bytes"
                    }) {
                if (!Json.isNull(m, key)) {
                    throw new IllegalArgumentException(
                            "\"" + key + "\" is set but \"gpu_samples\" is null");
                }
            }
            return null;
        }
        for (String key : new String[] {"gpu_mem_peak_bytes", "gpu_mem_total_bytes"}) {
            if (Json.isNull(m, key)) {
                throw new IllegalArgumentException(
                        "\"" + key + "\" is null but \"gpu_samples\" is set");
            }
        }
        return new GpuStats(
                Json.integer(m, "gpu_samples"),
                Json.decimal(m, "gpu_util_mean_percent"),
                Json.integer(m, "gpu_mem_peak_bytes"),
                Json.integer(m, "gpu_mem_total_bytes"));
    }

    /**
     * JSON for flat records: numbers (NaN as null) and quoted strings written, a flat object of
     * strings, numbers and nulls read (with the project's reader, {@link io.minato.json.Json}).
     */
    public static final class Json {
        private Json() {}

        public static String number(double v) {
            return Double.isFinite(v) ? Double.toString(v) : "null";
        }

        public static String quote(String s) {
            StringBuilder b = new StringBuilder(s.length() + 2).append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            return b.append('"').toString();
        }

        /**
         * A flat object's members: String, Double (numbers) or null; nested values and booleans are
         * refused.
         */
        static Map<String, Object> parseFlatObject(String text) {
            if (!(io.minato.json.Json.parse(text) instanceof Map<?, ?> object)) {
                throw new IllegalArgumentException("expected an object");
            }
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : object.entrySet()) {
                Object v = e.getValue();
                if (v != null && !(v instanceof String) && !(v instanceof Double)) {
                    throw new IllegalArgumentException(
                            "\"" + e.getKey() + "\" is neither a string, a number nor null");
                }
                out.put((String) e.getKey(), v);
            }
            return out;
        }

        static long integer(Map<String, Object> m, String key) {
            double v = decimal(m, key);
            if (v != Math.rint(v) || Double.isNaN(v)) {
                throw new IllegalArgumentException("\"" + key + "\" is not a whole number: " + v);
            }
            return (long) v;
        }

        static double decimal(Map<String, Object> m, String key) {
            Object v = present(m, key);
            if (v == null) {
                return Double.NaN;
            }
            if (!(v instanceof Double d)) {
                throw new IllegalArgumentException("\"" + key + "\" is not a number");
            }
            return d;
        }

        /** Whether {@code key}, which must be there, is null. */
        static boolean isNull(Map<String, Object> m, String key) {
            return present(m, key) == null;
        }

        static String string(Map<String, Object> m, String key) {
            if (!(present(m, key) instanceof String s)) {
                throw new IllegalArgumentException("\"" + key + "\" is not a string");
            }
            return s;
        }

        private static Object present(Map<String, Object> m, String key) {
            if (!m.containsKey(key)) {
                throw new IllegalArgumentException("\"" + key + "\" is missing");
            }
            return m.get(key);
        }
    }
}
