package io.minato.job;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Checks, before the first sample is prepared, that the run can write what it promises: a report or
 * trace that cannot be written would otherwise be lost after the whole run.
 */
final class OutputPaths {
    private OutputPaths() {}

    /**
     * Makes sure {@code file} can be written: its folder exists or is created, it is not a folder,
     * and a file can be created there (nothing existing is changed).
     *
     * @throws IllegalArgumentException in one line naming the option, the path and the problem
     */
    static void requireWritableFile(String option, Path file) {
        Path abs = file.toAbsolutePath();
        if (Files.isDirectory(abs)) {
            throw new IllegalArgumentException(
                    option + " " + file + ": is a folder; give a file to write");
        }
        Path parent = abs.getParent();
        try {
            if (parent != null) {
                Files.createDirectories(parent);
            }
            if (Files.exists(abs)) {
                if (!Files.isWritable(abs)) {
                    throw new AccessDeniedException(abs.toString());
                }
            } else {
                Files.delete(Files.createFile(abs));
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    option + " " + file + ": cannot write there (" + reason(e) + ")");
        }
    }

    /**
     * Creates the run directory, or makes sure an existing one takes files (a folder that exists
     * but cannot be written would fail at the run's first file, with Java's trace).
     *
     * @throws IllegalArgumentException in one line naming the path and the problem
     */
    static void createRunDir(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "--run-dir " + dir + ": cannot create it (" + reason(e) + ")");
        }
        try {
            Files.delete(Files.createTempFile(dir, ".minato-write-check", ".tmp"));
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "--run-dir "
                            + dir
                            + ": cannot write there; the folder takes no new files ("
                            + reason(e)
                            + ")");
        }
    }

    /** Less than this free where the run writes: a job that failed there met a full disk. */
    static final long NEARLY_FULL_BYTES = 8L << 20;

    /** Whether the file system of {@code dir} has (next to) no room left. */
    static boolean nearlyFull(Path dir) {
        try {
            return Files.getFileStore(dir).getUsableSpace() < NEARLY_FULL_BYTES;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Watches, while a job runs, whether the file system of a folder runs (next to) full. A job
     * whose checkpoints could not be written fails with no more than "Asynchronous task checkpoint
     * failed", and by the time it has failed Flink has deleted the failed checkpoints' and the
     * state backend's files, so the disk has room again when the failure is looked at.
     */
    static final class FullDiskWatch implements AutoCloseable {
        private final Path dir;
        private final ScheduledExecutorService timer;
        private volatile boolean seen;

        private FullDiskWatch(Path dir, long periodMillis) {
            this.dir = dir;
            this.timer =
                    Executors.newSingleThreadScheduledExecutor(
                            r -> {
                                Thread t = new Thread(r, "minato-full-disk-watch");
                                t.setDaemon(true);
                                return t;
                            });
            timer.scheduleWithFixedDelay(
                    () -> seen |= nearlyFull(dir), 0, periodMillis, TimeUnit.MILLISECONDS);
        }

        /** Looks at {@code dir}'s file system every {@code periodMillis} until closed. */
        static FullDiskWatch start(Path dir, long periodMillis) {
            return new FullDiskWatch(dir, periodMillis);
        }

        /** Whether the file system was nearly full at some look, or is now. */
        boolean sawNearlyFull() {
            return seen || nearlyFull(dir);
        }

        @Override
        public void close() {
            timer.shutdownNow();
        }
    }

    /** The cause in a few words; Java's own messages for these are a bare path. */
    static String reason(IOException e) {
        if (e instanceof FileAlreadyExistsException || e instanceof NotDirectoryException) {
            return "a file is in the way: " + ((FileSystemException) e).getFile();
        }
        if (e instanceof AccessDeniedException a) {
            return "permission denied: " + a.getFile();
        }
        if (e instanceof NoSuchFileException n) {
            return "no such file or folder: " + n.getFile();
        }
        if (e instanceof FileSystemException f && f.getReason() != null) {
            return f.getReason() + ": " + f.getFile();
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }
}
