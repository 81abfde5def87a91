package io.minato.loader;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.api.common.functions.RuntimeContext;

/**
 * The job's accumulators kept as files, for a job nobody waits for. Flink hands accumulators to the
 * client that waits for the job's end; a job submitted with {@code flink run -d} has no such
 * client, so its end-of-job report reads them from here instead. Only when the job asks (the global
 * job parameter {@link #DIR_PARAMETER} names the folder): each subtask writes its own at close, one
 * file per accumulator, {@code DIR/<name>/<task>-<subtask>}; a restarted subtask overwrites its
 * earlier attempt's, so the merged values are those of the last attempts, as in Flink's result.
 */
public final class AccumulatorFiles {
    /** Global job parameter: the folder to write accumulators into. */
    public static final String DIR_PARAMETER = "minato.accumulator-dir";

    private AccumulatorFiles() {}

    /**
     * Writes this subtask's accumulators of the given names (those it registered; others are
     * skipped) when the job names a folder; else nothing.
     *
     * @throws UncheckedIOException naming the file that could not be written
     */
    public static void write(RuntimeContext context, String... names) {
        String dir = context.getGlobalJobParameters().get(DIR_PARAMETER);
        if (dir == null) {
            return;
        }
        String owner =
                context.getTaskInfo().getTaskName().replaceAll("[^A-Za-z0-9._-]+", "_")
                        + "-"
                        + context.getTaskInfo().getIndexOfThisSubtask();
        for (String name : names) {
            Accumulator<?, ?> accumulator = context.getAccumulator(name);
            if (accumulator != null) {
                write(Path.of(dir).resolve(name).resolve(owner), accumulator);
            }
        }
    }

    static void write(Path file, Accumulator<?, ?> accumulator) {
        try {
            Files.createDirectories(file.getParent());
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(accumulator);
            }
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.write(tmp, bytes.toByteArray());
            Files.move(
                    tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write accumulator file " + file, e);
        }
    }

    /**
     * Every accumulator in {@code dir}, each merged over the subtasks that wrote it: name to
     * result, as Flink's {@code JobExecutionResult#getAllAccumulatorResults()} gives them. An empty
     * map when the folder does not exist.
     *
     * @throws IOException naming a file that is not an accumulator
     */
    public static Map<String, Object> read(Path dir) throws IOException {
        Map<String, Object> results = new TreeMap<>();
        if (!Files.isDirectory(dir)) {
            return results;
        }
        Map<String, Accumulator<?, ?>> merged = new HashMap<>();
        try (DirectoryStream<Path> names = Files.newDirectoryStream(dir)) {
            for (Path name : names) {
                try (DirectoryStream<Path> owners = Files.newDirectoryStream(name)) {
                    for (Path file : owners) {
                        if (file.getFileName().toString().endsWith(".tmp")) {
                            continue;
                        }
                        merge(merged, name.getFileName().toString(), readOne(file));
                    }
                }
            }
        }
        merged.forEach((name, accumulator) -> results.put(name, accumulator.getLocalValue()));
        return results;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void merge(
            Map<String, Accumulator<?, ?>> merged, String name, Accumulator<?, ?> accumulator) {
        Accumulator<?, ?> known = merged.get(name);
        if (known == null) {
            merged.put(name, accumulator);
        } else {
            ((Accumulator) known).merge((Accumulator) accumulator);
        }
    }

    private static Accumulator<?, ?> readOne(Path file) throws IOException {
        try (ObjectInputStream in =
                new ObjectInputStream(new ByteArrayInputStream(Files.readAllBytes(file)))) {
            Object o = in.readObject();
            if (o instanceof Accumulator<?, ?> a) {
                return a;
            }
            throw new IOException(file + ": not an accumulator but " + describe(o));
        } catch (ClassNotFoundException | java.io.ObjectStreamException e) {
            throw new IOException(file + ": not an accumulator file (" + e.getMessage() + ")", e);
        } catch (java.io.EOFException e) {
            throw new IOException(file + ": truncated accumulator file", e);
        }
    }

    private static String describe(Object o) {
        return o == null ? "null" : o.getClass().getName();
    }
}
