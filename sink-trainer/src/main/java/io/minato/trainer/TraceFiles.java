package io.minato.trainer;

import io.minato.sample.SamplePath;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The delivery trace: one file of CSV lines per device, merged into the contract's CSV. */
public final class TraceFiles {

    /**
     * The header of the merged trace (CONTRACT.md). Per-device files have no header and three more
     * columns, which the report reads: the sample's preparation CPU time in microseconds, and the
     * wall-clock millis its step started and ended at (files of runs before the step times were
     * traced have the first only).
     */
    public static final String HEADER = "epoch,index,case,device,step,path";

    /** One per-device line: where its contract part ends, and what follows. */
    private record DeviceLine(
            int contractEnd, SamplePath path, long prepMicros, long startMillis, long endMillis) {

        /** The columns after {@code path} are read from the end: {@code case} may hold commas. */
        static DeviceLine parse(String line) {
            int c3 = line.lastIndexOf(',');
            int c2 = line.lastIndexOf(',', c3 - 1);
            int c1 = line.lastIndexOf(',', c2 - 1);
            int c0 = c1 < 0 ? -1 : line.lastIndexOf(',', c1 - 1);
            SamplePath path = c0 < 0 ? null : pathOf(line.substring(c0 + 1, c1));
            if (path != null) {
                return new DeviceLine(
                        c1,
                        path,
                        Long.parseLong(line.substring(c1 + 1, c2)),
                        Long.parseLong(line.substring(c2 + 1, c3)),
                        Long.parseLong(line.substring(c3 + 1)));
            }
            // Without the step's times: ...,path,prep
            return new DeviceLine(
                    c3,
                    SamplePath.valueOf(line.substring(c2 + 1, c3).toUpperCase(Locale.ROOT)),
                    Long.parseLong(line.substring(c3 + 1)),
                    -1,
                    -1);
        }

        private static SamplePath pathOf(String field) {
            for (SamplePath p : SamplePath.values()) {
                if (p.csv().equals(field)) {
                    return p;
                }
            }
            return null;
        }
    }

    private static final Pattern DEVICE_FILE = Pattern.compile("trace-device-(\\d+)\\.csv");

    private TraceFiles() {}

    /** Where device {@code device} appends its lines. */
    public static Path deviceFile(Path dir, int device) {
        return dir.resolve("trace-device-" + device + ".csv");
    }

    /**
     * Writes {@code out}: the header, then every device file's lines, devices in order. Replaces
     * {@code out} atomically, so a reader never sees half a trace.
     */
    public static void merge(Path dir, Path out) throws IOException {
        List<Path> files = deviceFiles(dir);
        Path parent = out.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        Path tmp = Files.createTempFile(parent, out.getFileName().toString(), ".tmp");
        try {
            try (OutputStream os = Files.newOutputStream(tmp)) {
                os.write((HEADER + "\n").getBytes(StandardCharsets.UTF_8));
                for (Path f : files) {
                    try (BufferedReader r = Files.newBufferedReader(f, StandardCharsets.UTF_8)) {
                        for (String line = r.readLine(); line != null; line = r.readLine()) {
                            os.write(
                                    line.substring(0, DeviceLine.parse(line).contractEnd())
                                            .getBytes(StandardCharsets.UTF_8));
                            os.write('\n');
                        }
                    }
                }
            }
            Files.move(
                    tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** The preparation CPU time, in milliseconds, of every sample the devices trained. */
    public static List<Double> prepMillis(Path dir) throws IOException {
        List<Double> ms = new ArrayList<>();
        prepMillisByPath(dir).values().forEach(ms::addAll);
        return ms;
    }

    /**
     * The preparation CPU time, in milliseconds, of every sample the devices trained, by the path
     * it took (both keys always there).
     */
    public static Map<SamplePath, List<Double>> prepMillisByPath(Path dir) throws IOException {
        return timings(dir).prepMillis();
    }

    /**
     * The wall-clock span of every step the devices trained, {start, end} in millis, in each
     * device's order, devices in order. Steps whose times were not traced are left out.
     */
    public static List<long[]> stepTimes(Path dir) throws IOException {
        return timings(dir).steps();
    }

    /**
     * What the per-device lines say of time: each trained sample's preparation CPU milliseconds by
     * the path it took (both keys always there), and each step's {start, end} wall millis (see
     * {@link #stepTimes}).
     */
    public record Timings(Map<SamplePath, List<Double>> prepMillis, List<long[]> steps) {}

    /** The {@link Timings} of the per-device files in {@code dir}, read in one pass. */
    public static Timings timings(Path dir) throws IOException {
        Map<SamplePath, List<Double>> ms = new EnumMap<>(SamplePath.class);
        for (SamplePath path : SamplePath.values()) {
            ms.put(path, new ArrayList<>());
        }
        List<long[]> steps = new ArrayList<>();
        for (Path f : deviceFiles(dir)) {
            long[] last = null;
            try (BufferedReader r = Files.newBufferedReader(f, StandardCharsets.UTF_8)) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    DeviceLine d = DeviceLine.parse(line);
                    ms.get(d.path()).add(d.prepMicros() / 1000.0);
                    // Consecutive lines of one step share its times.
                    if (d.startMillis() >= 0
                            && (last == null
                                    || last[0] != d.startMillis()
                                    || last[1] != d.endMillis())) {
                        last = new long[] {d.startMillis(), d.endMillis()};
                        steps.add(last);
                    }
                }
            }
        }
        return new Timings(ms, steps);
    }

    /** The per-device trace files in {@code dir}, ordered by device. */
    public static List<Path> deviceFiles(Path dir) throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> entries = Files.list(dir)) {
            entries.filter(p -> DEVICE_FILE.matcher(p.getFileName().toString()).matches())
                    .forEach(files::add);
        }
        files.sort(Comparator.comparingLong(TraceFiles::deviceOf));
        return files;
    }

    private static long deviceOf(Path file) {
        Matcher m = DEVICE_FILE.matcher(file.getFileName().toString());
        return m.matches() ? Long.parseLong(m.group(1)) : -1;
    }
}
