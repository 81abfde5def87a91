package io.minato.trainer;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The savepoints a run's job completed, as its run directory records them: {@code savepoints.txt},
 * one savepoint folder's URI a line, whoever took it ({@code flink savepoint}, {@code flink stop
 * --savepointPath DIR}, the web UI), so that {@code train --resume RUN_DIR} finds one wherever it
 * went; and {@code stopped}, the last savepoint's URI when the job was stopped with it ({@code
 * flink stop} without {@code --drain}): the job then ends as finished with samples left to train,
 * which the run must not take for its end.
 */
public final class Savepoints {
    static final String LIST = "savepoints.txt";
    static final String STOPPED = "stopped";

    private Savepoints() {}

    /** Records a completed savepoint; {@code stopping}: the job stops with it. */
    static synchronized void completed(Path runDir, URI savepoint, boolean stopping)
            throws IOException {
        Files.writeString(
                runDir.resolve(LIST),
                savepoint + "\n",
                StandardCharsets.UTF_8,
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        if (stopping) {
            Files.writeString(runDir.resolve(STOPPED), savepoint + "\n", StandardCharsets.UTF_8);
        }
    }

    /** The run's savepoints on this machine's file systems, oldest first, those that exist. */
    public static List<Path> recorded(Path runDir) throws IOException {
        Path list = runDir.resolve(LIST);
        List<Path> found = new ArrayList<>();
        if (!Files.exists(list)) {
            return found;
        }
        for (String line : Files.readAllLines(list, StandardCharsets.UTF_8)) {
            Path p = local(line);
            if (p != null && Files.isDirectory(p)) {
                found.add(p);
            }
        }
        return found;
    }

    /** The savepoint the run's job was stopped with, or null if it was not stopped so. */
    public static String stoppedWith(Path runDir) throws IOException {
        Path marker = runDir.resolve(STOPPED);
        return Files.exists(marker)
                ? Files.readString(marker, StandardCharsets.UTF_8).strip()
                : null;
    }

    /** Forgets that the run was stopped: it goes on now. */
    public static void resumed(Path runDir) throws IOException {
        Files.deleteIfExists(runDir.resolve(STOPPED));
    }

    /** A savepoint URI as a local path; null for another file system's (s3://, hdfs://). */
    private static Path local(String uri) {
        try {
            URI u = URI.create(uri.strip());
            return u.getScheme() == null
                    ? Path.of(uri.strip())
                    : "file".equals(u.getScheme()) ? Path.of(u) : null;
        } catch (IllegalArgumentException e) {
            return null; // a line this code did not write
        }
    }
}
