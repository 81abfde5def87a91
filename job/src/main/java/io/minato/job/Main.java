package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.job.generate.GenerateCommand;
import io.minato.job.profile.ProfileCommand;
import io.minato.job.profile.StepTimeCommand;
import io.minato.job.report.PlotCommand;
import io.minato.npy.NpyFormatException;
import io.minato.trainer.gpu.FlinkGpus;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.apache.flink.util.SerializedThrowable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The command line of minato-flink: train, evaluate, generate, profile, step-time, plot. */
@Command(
        name = "minato",
        mixinStandardHelpOptions = true,
        description =
                "MinatoLoader on Apache Flink: a training data loader that keeps accelerators busy.",
        subcommands = {
            TrainCommand.class,
            EvaluateCommand.class,
            GenerateCommand.class,
            ProfileCommand.class,
            StepTimeCommand.class,
            PlotCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Main {
    /** Exit status for bad input (a file the loader refuses). */
    public static final int EXIT_BAD_INPUT = 3;

    /**
     * Set when {@code main} runs inside a JobManager (Flink's application mode): its process must
     * live on after {@code main} returns, to run the job it submitted.
     */
    private static volatile boolean insideJobManager;

    public static void main(String[] args) {
        int status = run(args);
        if (!insideJobManager) {
            System.exit(status);
        }
        if (status != 0) {
            // The JobManager reports the application as failed; the line above says why.
            throw new IllegalStateException("minato ended with exit status " + status);
        }
    }

    /** Says that {@code main} runs inside a JobManager, which it must not exit. */
    static void runsInsideJobManager() {
        insideJobManager = true;
    }

    /** Runs a command line; bad input ends in one line on stderr and a non-zero status. */
    public static int run(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setParameterExceptionHandler(
                (e, a) -> {
                    e.getCommandLine()
                            .getErr()
                            .println("error: " + e.getMessage() + " (see --help)");
                    return CommandLine.ExitCode.USAGE;
                });
        cli.setExecutionExceptionHandler(
                (e, commandLine, parseResult) -> failure(e, commandLine.getErr()));
        return cli.execute(args);
    }

    /** What a failed command says on {@code err} (one line wherever it can), and its status. */
    static int failure(Exception e, java.io.PrintWriter err) {
        if (e instanceof BadInputException) {
            err.println("error: " + e.getMessage());
            return EXIT_BAD_INPUT;
        }
        if (e instanceof Stopped) {
            err.println("error: " + e.getMessage());
            return 1;
        }
        String badInput = badInputInJob(e);
        if (badInput != null) {
            // Bad input met while the job ran (a case file changed under it, say):
            // Flink wraps it in its own exceptions; the line is what matters.
            err.println("error: " + badInput);
            return EXIT_BAD_INPUT;
        }
        String log = System.getProperty(RunLog.PROPERTY);
        if (restartsExhausted(e) && log != null) {
            // Failures in a row past --restart-attempts: what failed, in one line;
            // the trace goes to the run's log (a logger outside io.minato: file only).
            org.slf4j.LoggerFactory.getLogger("minato.failure")
                    .error("the job failed, and no restart was left", e);
            err.println(
                    "error: the job failed, and no restart was left"
                            + " (--restart-attempts): "
                            + rootCause(e)
                            + "; the whole trace is in "
                            + log);
            return 1;
        }
        // The trace helps whoever debugs; the last line says what happened.
        e.printStackTrace(err);
        err.println("error: " + rootCause(e));
        return 1;
    }

    /** Whether Flink gave up on the job: its restart strategy allowed no more restarts. */
    static boolean restartsExhausted(Throwable e) {
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            String m = t.getMessage();
            if (m != null && m.contains("Recovery is suppressed by")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The message of bad input among the causes of a failed job, or null. Flink hands causes over
     * as {@link SerializedThrowable}s, which keep the original class's name.
     */
    static String badInputInJob(Throwable e) {
        String found = null;
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            String name = className(t);
            if (name.equals(BadInputException.class.getName())
                    || name.equals(NpyFormatException.class.getName())) {
                found = originalMessage(t);
            }
        }
        return found;
    }

    /**
     * The message of a full disk (or exhausted quota) among the causes of a failed job, or null:
     * the shortest such message that names a path, else the bare one.
     */
    /**
     * {@code e}, its causes, and what any of them suppressed, each once: where a Flink thread died
     * (the channel state writer meeting a full disk, say), a later failure carries the first one
     * only as suppressed ("not running").
     */
    static List<Throwable> withSuppressed(Throwable e) {
        List<Throwable> all = new ArrayList<>();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<Throwable> next = new ArrayDeque<>();
        if (e != null) {
            next.add(e);
        }
        while (!next.isEmpty()) {
            Throwable t = next.poll();
            if (!seen.add(t)) {
                continue;
            }
            all.add(t);
            if (t.getCause() != null) {
                next.add(t.getCause());
            }
            next.addAll(Arrays.asList(t.getSuppressed()));
        }
        return all;
    }

    static String diskFullInJob(Throwable e) {
        String bare = null;
        String withPath = null;
        for (Throwable t : withSuppressed(e)) {
            String m = String.valueOf(t.getMessage()).lines().findFirst().orElse("");
            if (!m.contains("No space left on device") && !m.contains("Disk quota exceeded")) {
                continue;
            }
            int cut = m.lastIndexOf("IOException: ");
            m = cut >= 0 ? m.substring(cut + "IOException: ".length()) : m;
            if (m.contains("/")) {
                withPath = withPath == null || m.length() < withPath.length() ? m : withPath;
            } else {
                bare = m;
            }
        }
        return withPath != null ? withPath : bare;
    }

    /**
     * Where the client could no longer reach the cluster, from a failed attached {@code flink run}
     * (the JobManager stopped or died), e.g. {@code Connection refused: localhost/127.0.0.1:8081};
     * null if no cause is a refused or failed connection.
     */
    static String connectionLostInJob(Throwable e) {
        String found = null;
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            if (t instanceof java.net.ConnectException) {
                String m = String.valueOf(t.getMessage());
                if (found == null || (m.contains(":") && !found.contains(":"))) {
                    found = m;
                }
            }
        }
        return found;
    }

    /**
     * Whether the job could not start from its checkpoint because the checkpoint holds state of an
     * operator this build's dataflow lacks (written by a build whose dataflow differs).
     */
    static boolean checkpointMismatchInJob(Throwable e) {
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            if (String.valueOf(t.getMessage())
                    .contains("Cannot map checkpoint/savepoint state for operator")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The message of a TaskManager short of the GPUs the job was configured to take from Flink
     * ({@link FlinkGpus.Shortage}) among the causes of a failed job, or null.
     */
    static String gpuShortageInJob(Throwable e) {
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            if (className(t).equals(FlinkGpus.Shortage.class.getName())) {
                return originalMessage(t);
            }
        }
        return null;
    }

    /** Whether the job ended because it was cancelled ({@code flink cancel}, the web UI). */
    static boolean cancelledInJob(Throwable e) {
        for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
            if (className(t).equals("org.apache.flink.runtime.client.JobCancellationException")) {
                return true;
            }
        }
        return false;
    }

    /** A run that stopped for a reason one line says all about (no stack trace): exit status 1. */
    static final class Stopped extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Stopped(String message) {
            super(message);
        }
    }

    /** The class of {@code t}, or the original one where Flink serialized it. */
    private static String className(Throwable t) {
        return t instanceof SerializedThrowable st
                ? st.getOriginalErrorClassName()
                : t.getClass().getName();
    }

    /** A message without the "class: " prefix that SerializedThrowable and wrapping add. */
    private static String originalMessage(Throwable t) {
        String m = String.valueOf(t.getMessage());
        for (String prefix :
                new String[] {
                    BadInputException.class.getName() + ": ",
                    NpyFormatException.class.getName() + ": ",
                    FlinkGpus.Shortage.class.getName() + ": "
                }) {
            while (m.startsWith(prefix)) {
                m = m.substring(prefix.length());
            }
        }
        return m.lines().findFirst().orElse(m);
    }

    private static String rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage();
        if (t instanceof SerializedThrowable && m != null) {
            return m.lines().findFirst().orElse(m); // already "original.Class: message"
        }
        return t.getClass().getSimpleName()
                + (m == null ? "" : ": " + m.lines().findFirst().orElse(""));
    }
}
