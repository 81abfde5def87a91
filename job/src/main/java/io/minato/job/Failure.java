package io.minato.job;

import io.minato.data.BadInputException;
import io.minato.npy.NpyFormatException;
import io.minato.trainer.ConvolutionCheck;
import io.minato.trainer.RestartsRunOut;
import io.minato.trainer.gpu.FlinkGpus;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.apache.flink.util.SerializedThrowable;

/**
 * What a failed command or job comes down to, read in one walk over its causes: the findings that
 * one line says all about (bad input, a full disk, a lost JobManager, ...), and the root cause for
 * the rest. Flink hands causes over as {@link SerializedThrowable}s, which keep the original
 * class's name; a thread that died first (the channel state writer meeting a full disk, say) is
 * often carried by a later failure only as suppressed, which the walk reads for the full disk.
 */
final class Failure {
    private static final String RECOVERY_SUPPRESSED = "Recovery is suppressed by";
    private static final String CHECKPOINT_MISMATCH =
            "Cannot map checkpoint/savepoint state for operator";
    private static final String CANCELLED =
            "org.apache.flink.runtime.client.JobCancellationException";
    private static final String JOB_FAILED =
            "org.apache.flink.runtime.client.JobExecutionException";

    private String badInput;
    private boolean restartsExhausted;
    private String diskFullWithPath;
    private String diskFullBare;
    private String connectionLost;
    private boolean checkpointMismatch;
    private String gpuShortage;
    private String wrongConvolutions;
    private boolean cancelled;
    private boolean jobFailed;
    private Throwable root;

    private Failure() {}

    /** Reads {@code e}, its causes and what any of them suppressed, each once. */
    static Failure of(Throwable e) {
        Failure f = new Failure();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        // Each throwable with whether it is on e's own cause chain (else under a suppressed one).
        ArrayDeque<Throwable> next = new ArrayDeque<>();
        ArrayDeque<Boolean> onChain = new ArrayDeque<>();
        if (e != null) {
            next.add(e);
            onChain.add(true);
        }
        while (!next.isEmpty()) {
            Throwable t = next.poll();
            boolean chain = onChain.poll();
            if (!seen.add(t)) {
                continue;
            }
            f.diskFull(t);
            if (chain) {
                f.onChain(t);
            }
            if (t.getCause() != null && t.getCause() != t) {
                next.add(t.getCause());
                onChain.add(chain);
            }
            for (Throwable s : t.getSuppressed()) {
                next.add(s);
                onChain.add(false);
            }
        }
        return f;
    }

    private void onChain(Throwable t) {
        root = t;
        String name = className(t);
        String m = String.valueOf(t.getMessage());
        if (name.equals(BadInputException.class.getName())
                || name.equals(NpyFormatException.class.getName())) {
            badInput = originalMessage(t); // the deepest: the file's own line
        }
        if (gpuShortage == null && name.equals(FlinkGpus.Shortage.class.getName())) {
            gpuShortage = originalMessage(t);
        }
        if (wrongConvolutions == null && name.equals(ConvolutionCheck.Wrong.class.getName())) {
            wrongConvolutions = originalMessage(t);
        }
        cancelled |= name.equals(CANCELLED);
        jobFailed |= name.equals(JOB_FAILED);
        restartsExhausted |=
                m.contains(RECOVERY_SUPPRESSED) || name.equals(RestartsRunOut.class.getName());
        checkpointMismatch |= m.contains(CHECKPOINT_MISMATCH);
        if (t instanceof java.net.ConnectException
                && (connectionLost == null || (m.contains(":") && !connectionLost.contains(":")))) {
            connectionLost = m;
        }
    }

    /** The shortest message of a full disk (or exhausted quota) that names a path, else any. */
    private void diskFull(Throwable t) {
        String m = String.valueOf(t.getMessage()).lines().findFirst().orElse("");
        if (!m.contains("No space left on device") && !m.contains("Disk quota exceeded")) {
            return;
        }
        int cut = m.lastIndexOf("IOException: ");
        m = cut >= 0 ? m.substring(cut + "IOException: ".length()) : m;
        if (!m.contains("/")) {
            diskFullBare = m;
        } else if (diskFullWithPath == null || m.length() < diskFullWithPath.length()) {
            diskFullWithPath = m;
        }
    }

    /** The message of bad input among the causes, or null. */
    String badInput() {
        return badInput;
    }

    /**
     * Whether the job was given up: Flink's restart strategy allowed no more restarts, or it failed
     * more often since its last completed checkpoint than {@code --restart-attempts} allows.
     */
    boolean restartsExhausted() {
        return restartsExhausted;
    }

    /** The message of a full disk (or exhausted quota), or null. */
    String diskFull() {
        return diskFullWithPath != null ? diskFullWithPath : diskFullBare;
    }

    /**
     * Where the client could no longer reach the cluster, from a failed attached {@code flink run}
     * (the JobManager stopped or died), e.g. {@code Connection refused: localhost/127.0.0.1:8081};
     * null if no cause is a refused or failed connection.
     */
    String connectionLost() {
        return connectionLost;
    }

    /**
     * Whether the job could not start from its checkpoint because the checkpoint holds state of an
     * operator this build's dataflow lacks (written by a build whose dataflow differs).
     */
    boolean checkpointMismatch() {
        return checkpointMismatch;
    }

    /**
     * The message of a TaskManager short of the GPUs the job was configured to take from Flink
     * ({@link FlinkGpus.Shortage}), or null.
     */
    String gpuShortage() {
        return gpuShortage;
    }

    /** Whether the job ended because it was cancelled ({@code flink cancel}, the web UI). */
    boolean cancelled() {
        return cancelled;
    }

    /** The last cause, as one line: "Class: message". */
    String rootCause() {
        Throwable t = root;
        String m = t.getMessage();
        if (t instanceof SerializedThrowable && m != null) {
            return m.lines().findFirst().orElse(m); // already "original.Class: message"
        }
        return t.getClass().getSimpleName()
                + (m == null ? "" : ": " + m.lines().findFirst().orElse(""));
    }

    /**
     * The failures of a running job that one line says all about, with how to go on: the JobManager
     * lost under {@code flink run}, the job cancelled, TaskManagers without the GPUs the
     * configuration promises, a full disk (named in a cause, or the run directory's file system
     * nearly full at some time while the job ran, as when the TaskManager was lost to it or its
     * checkpoints could not be written); null for any other.
     */
    Stopped inRun(Path run, boolean embedded, boolean diskRanFull) {
        String lost = embedded ? null : connectionLost;
        if (lost != null) {
            return new Stopped(
                    "lost the JobManager ("
                            + lost
                            + "); without high availability its job is gone, and its"
                            + " checkpoints stay in "
                            + run
                            + ": once a cluster runs, continue it with flink run <the job's"
                            + " jar> train --resume "
                            + run);
        }
        if (checkpointMismatch) {
            // Flink suggests --allowNonRestoredState, which would drop the source's position
            // and train the run again from its start.
            return new Stopped(
                    "the checkpoint to continue "
                            + run
                            + " from was written by a build whose dataflow differs from this"
                            + " one's (Flink cannot map its operators' state to this job):"
                            + " continue it with the build that wrote it, or start a new run");
        }
        if (cancelled) {
            return stoppedWithResume("the job was cancelled", run, "");
        }
        if (gpuShortage != null) {
            return new Stopped(gpuShortage);
        }
        String full = diskFull();
        if (full == null && diskRanFull) {
            full = "no space left on the disk of " + run;
        }
        return full == null ? null : stoppedWithResume(full, run, "free space, then ");
    }

    /**
     * The run was stopped because the training process that launched it ended ({@code
     * --exit-with-stdin}).
     */
    static Stopped launcherGone(Path run) {
        return stoppedWithResume(
                "the training process that launched the run is gone, so the job was cancelled",
                run,
                "");
    }

    private static Stopped stoppedWithResume(String what, Path run, String first) {
        return new Stopped(
                what
                        + "; what the run wrote stays in "
                        + run
                        + ": "
                        + first
                        + "continue it with --resume "
                        + run);
    }

    /** What a failed command says on {@code err} (one line wherever it can), and its status. */
    static int report(Exception e, PrintWriter err) {
        if (e instanceof BadInputException) {
            err.println("error: " + e.getMessage());
            return Main.EXIT_BAD_INPUT;
        }
        if (e instanceof Stopped) {
            err.println("error: " + e.getMessage());
            return 1;
        }
        Failure f = of(e);
        if (f.wrongConvolutions != null) {
            // libtorch on this CPU, not the run: the line says what to set.
            err.println("error: " + f.wrongConvolutions);
            return 1;
        }
        if (f.badInput != null) {
            // Bad input met while the job ran (a case file changed under it, say):
            // Flink wraps it in its own exceptions; the line is what matters.
            err.println("error: " + f.badInput);
            return Main.EXIT_BAD_INPUT;
        }
        String log = System.getProperty(RunLog.PROPERTY);
        if (log != null && (f.restartsExhausted || f.jobFailed)) {
            // A job that failed for good: what failed, in one line; the trace goes to the run's
            // log, written here rather than through log4j, whose configuration under flink run
            // (the client's) would print it on the console.
            boolean kept = keepTrace(e, Path.of(log));
            if (!kept) {
                e.printStackTrace(err);
            }
            err.println(
                    (f.restartsExhausted
                                    ? "error: the job failed, and no restart was left"
                                            + " (--restart-attempts): "
                                    : "error: the job failed: ")
                            + f.rootCause()
                            + (kept ? "; the whole trace is in " + log : ""));
            return 1;
        }
        // The trace helps whoever debugs; the last line says what happened.
        e.printStackTrace(err);
        err.println("error: " + f.rootCause());
        return 1;
    }

    /** Appends {@code e}'s stack trace to {@code log}; whether it could. */
    private static boolean keepTrace(Exception e, Path log) {
        java.io.StringWriter trace = new java.io.StringWriter();
        try (PrintWriter w = new PrintWriter(trace)) {
            w.println("the job failed for good:");
            e.printStackTrace(w);
        }
        try {
            java.nio.file.Files.writeString(
                    log,
                    trace.toString(),
                    java.nio.charset.StandardCharsets.UTF_8,
                    java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
            return true;
        } catch (java.io.IOException | RuntimeException io) {
            return false;
        }
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
                    FlinkGpus.Shortage.class.getName() + ": ",
                    ConvolutionCheck.Wrong.class.getName() + ": "
                }) {
            while (m.startsWith(prefix)) {
                m = m.substring(prefix.length());
            }
        }
        return m.lines().findFirst().orElse(m);
    }
}
