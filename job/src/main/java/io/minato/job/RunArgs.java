package io.minato.job;

import io.minato.trainer.Savepoints;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * What {@code train --resume RUN_DIR} needs from a run directory: the options the run was started
 * with ({@value #FILE}, one argument per line, paths made absolute) and its latest complete
 * checkpoint.
 */
final class RunArgs {
    static final String FILE = "run-args";

    /**
     * The run's identity, a random id written when a run starts afresh in the folder and kept by
     * every resume: a training process's saved loader state names it, so that a state is never
     * applied to another run (python/minato_flink reads it).
     */
    static final String ID = "run-id";

    /** Written when the job has trained every sample: such a run has nothing to resume. */
    static final String FINISHED = "finished";

    /**
     * The copy of {@code --cases}' list that the run keeps: the run's training set, whatever
     * becomes of the file it was given.
     */
    static final String CASES = "run-cases";

    /** Options whose value is a path: stored absolute, so a resume may start from any folder. */
    private static final Set<String> PATH_OPTIONS =
            Set.of("--data", "--report", "--trace", "--cache-dir");

    /**
     * Options not stored: the folder itself, and those about the process that started the run
     * rather than the run, so that a resume (from a terminal, say) does not inherit them.
     */
    private static final Set<String> NOT_STORED = Set.of("--run-dir", "--log-events");

    private static final Set<String> NOT_STORED_FLAGS = Set.of("--exit-with-stdin");

    /**
     * Options that change how a run goes, not what it trains: a resume may give them anew (the last
     * value counts). Any other option given beside {@code --resume} must repeat the stored value.
     */
    static final Set<String> HOW =
            Set.of(
                    "--exit-with-stdin",
                    "--log-events",
                    "--report",
                    "--trace",
                    "--web-ui",
                    "--no-web-ui",
                    "--plots",
                    "--no-plots",
                    "--rest-port",
                    "--metrics-port",
                    "--timeout",
                    "--queue-depth",
                    "--checkpoint-interval",
                    "--restart-attempts",
                    "--serve-bind",
                    "--serve-token-file",
                    "--case-cache",
                    "--no-case-cache",
                    "--cache-dir",
                    "--cache-memory",
                    "--resume");

    private RunArgs() {}

    /** Writes the run's arguments, without those {@link #NOT_STORED}. */
    static void write(Path runDir, List<String> args) throws IOException {
        List<String> stored = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            String name = name(a);
            boolean inline = !name.equals(a);
            if (NOT_STORED.contains(name)) {
                i += inline ? 0 : 1;
                continue;
            }
            if (NOT_STORED_FLAGS.contains(name)) {
                continue;
            }
            if (name.equals("--cases")) {
                String value = inline ? a.substring(name.length() + 1) : args.get(++i);
                Path copy = runDir.resolve(CASES).toAbsolutePath().normalize();
                Files.copy(Path.of(value), copy, StandardCopyOption.REPLACE_EXISTING);
                stored.add(name);
                stored.add(copy.toString());
                continue;
            }
            if (PATH_OPTIONS.contains(name)) {
                String value = inline ? a.substring(name.length() + 1) : args.get(++i);
                stored.add(name);
                stored.add(Path.of(value).toAbsolutePath().normalize().toString());
                continue;
            }
            stored.add(a);
        }
        Files.write(runDir.resolve(FILE), stored, StandardCharsets.UTF_8);
        Files.deleteIfExists(runDir.resolve(FINISHED));
        Savepoints.resumed(runDir);
    }

    /**
     * The run's identity: a new one for a run that starts afresh ({@code fresh}), else the one it
     * has (a new one where a run from before identities has none).
     */
    static String identify(Path runDir, boolean fresh) throws IOException {
        Path file = runDir.resolve(ID);
        if (!fresh && Files.isRegularFile(file)) {
            String id = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (!id.isEmpty()) {
                return id;
            }
        }
        String id = UUID.randomUUID().toString();
        Path tmp = runDir.resolve(ID + ".tmp");
        Files.writeString(tmp, id + "\n", StandardCharsets.UTF_8);
        // A reader sees the old identity or the new one, never half a file.
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return id;
    }

    /** Marks the run as trained to the end. */
    static void finished(Path runDir) throws IOException {
        Files.writeString(runDir.resolve(FINISHED), "", StandardCharsets.UTF_8);
    }

    /** The stored arguments; one line naming the folder if it holds none or finished. */
    static List<String> read(Path runDir) {
        Path file = runDir.resolve(FILE);
        if (Files.exists(runDir.resolve(FINISHED))) {
            throw refused(runDir, "that run finished; there is nothing left to train");
        }
        if (!Files.isRegularFile(file)) {
            throw refused(runDir, "not the run directory of a train run (no " + FILE + " in it)");
        }
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw refused(runDir, "cannot read " + file + " (" + e.getMessage() + ")");
        }
    }

    /** The value the stored arguments give an option (any of its names), if they give one. */
    static Optional<String> valueOf(List<String> stored, Set<String> names) {
        String found = null;
        for (int i = 0; i < stored.size(); i++) {
            String a = stored.get(i);
            String name = name(a);
            if (names.contains(name)) {
                found =
                        !name.equals(a)
                                ? a.substring(name.length() + 1)
                                : i + 1 < stored.size() ? stored.get(i + 1) : "";
            }
        }
        return Optional.ofNullable(found);
    }

    /**
     * The newest complete checkpoint or savepoint of the run: a {@code chk-N} folder with its
     * {@code _metadata} under {@code RUN_DIR/checkpoints/<job id>/}, over every attempt the run
     * had, or a savepoint its job completed, wherever it went ({@link Savepoints}).
     */
    static Path latestCheckpoint(Path runDir) {
        Path root = runDir.resolve("checkpoints");
        List<Path> complete = new ArrayList<>();
        try {
            Savepoints.recorded(runDir).stream()
                    .filter(p -> Files.isRegularFile(p.resolve("_metadata")))
                    .forEach(complete::add);
        } catch (IOException e) {
            throw refused(runDir, "cannot read its list of savepoints (" + e.getMessage() + ")");
        }
        if (Files.isDirectory(root)) {
            try (Stream<Path> jobs = Files.list(root)) {
                for (Path job : jobs.toList()) {
                    if (!Files.isDirectory(job)) {
                        continue;
                    }
                    try (Stream<Path> chks = Files.list(job)) {
                        chks.filter(p -> p.getFileName().toString().startsWith("chk-"))
                                .filter(p -> Files.isRegularFile(p.resolve("_metadata")))
                                .forEach(complete::add);
                    }
                }
            } catch (IOException e) {
                throw refused(runDir, "cannot list " + root + " (" + e.getMessage() + ")");
            }
        }
        return complete.stream()
                .max(
                        Comparator.comparing(RunArgs::metadataTime)
                                .thenComparing(RunArgs::checkpointNumber))
                .orElseThrow(
                        () ->
                                refused(
                                        runDir,
                                        "no complete checkpoint to resume from (none under "
                                                + root
                                                + ", no savepoint recorded)"));
    }

    /** Why {@code --resume runDir} cannot go on, in one line naming the folder. */
    private static IllegalArgumentException refused(Path runDir, String problem) {
        return new IllegalArgumentException("--resume " + runDir + ": " + problem);
    }

    /** The option an argument names: {@code --seed} of {@code --seed=7} and of {@code --seed}. */
    private static String name(String arg) {
        int eq = arg.indexOf('=');
        return eq < 0 ? arg : arg.substring(0, eq);
    }

    private static long checkpointNumber(Path chk) {
        String name = chk.getFileName().toString();
        try {
            return name.startsWith("chk-") ? Long.parseLong(name.substring("chk-".length())) : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static long metadataTime(Path chk) {
        try {
            return Files.getLastModifiedTime(chk.resolve("_metadata")).toMillis();
        } catch (IOException e) {
            return Long.MIN_VALUE;
        }
    }
}
