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
     * The header of the merged trace (CONTRACT.md). Per-device files have no header and one more
     * column, the sample's preparation CPU time in microseconds, which the report reads.
     */
    public static final String HEADER = "epoch,index,case,device,step,path";

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
                                    line.substring(0, line.lastIndexOf(','))
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
        Map<SamplePath, List<Double>> ms = new EnumMap<>(SamplePath.class);
        for (SamplePath path : SamplePath.values()) {
            ms.put(path, new ArrayList<>());
        }
        for (Path f : deviceFiles(dir)) {
            try (BufferedReader r = Files.newBufferedReader(f, StandardCharsets.UTF_8)) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    int last = line.lastIndexOf(',');
                    String path = line.substring(line.lastIndexOf(',', last - 1) + 1, last);
                    ms.get(SamplePath.valueOf(path.toUpperCase(Locale.ROOT)))
                            .add(Long.parseLong(line.substring(last + 1)) / 1000.0);
                }
            }
        }
        return ms;
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
