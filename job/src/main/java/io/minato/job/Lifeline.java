package io.minato.job;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The launching process's life, read from this process's standard input ({@code train
 * --exit-with-stdin}): the launcher keeps the write end of a pipe and never writes to it, so the
 * pipe reaches end of file when the launcher ends, however it ends (a return, an exception, a
 * signal, the OOM killer), and only then. The run then stops: the job is cancelled (its latest
 * checkpoint stays for {@code --resume}), and a run that does not end within {@link #GRACE} of it
 * is halted, its temporary files removed first.
 */
final class Lifeline {
    private static final Logger LOG = LoggerFactory.getLogger(Lifeline.class);

    /** How long the run may take to stop once its launcher is gone. */
    static final Duration GRACE = Duration.ofSeconds(20);

    /** The exit status of a run stopped because its launcher went away. */
    static final int EXIT_LAUNCHER_GONE = 1;

    private Runnable stop; // null until the job runs: then the process just exits
    private volatile Path tmpDir; // the run's temporary folder, removed before a halt
    private volatile boolean ended;
    private boolean finished;

    private Lifeline() {}

    /**
     * Starts watching {@code in} on a daemon thread; at its end the job is stopped through what
     * {@link #whileRunning} was given, or, before that, the process exits.
     */
    static Lifeline watch(InputStream in) {
        Lifeline line = new Lifeline();
        Thread t = new Thread(() -> line.await(in), "minato-lifeline");
        t.setDaemon(true);
        t.start();
        return line;
    }

    /**
     * While the job runs, the launcher's end calls {@code cancel}; a halt removes {@code tmpDir}
     * first.
     */
    void whileRunning(Runnable cancel, Path tmpDir) {
        this.tmpDir = tmpDir;
        boolean now;
        synchronized (this) {
            stop = cancel;
            now = ended;
        }
        if (now) {
            cancel.run(); // it ended while the job was being submitted
        }
    }

    /**
     * The job has ended by itself: the launcher's end no longer stops anything (the process reports
     * and exits on its own).
     */
    synchronized void jobEnded() {
        stop = null;
        finished = true;
    }

    /** Whether the launcher is gone. */
    boolean ended() {
        return ended;
    }

    private void await(InputStream in) {
        byte[] discard = new byte[256];
        try {
            while (in.read(discard) >= 0) {
                // The launcher writes nothing; anything it does write means nothing.
            }
        } catch (IOException e) {
            // A closed or broken input: the launcher is gone all the same.
        }
        Runnable cancel;
        synchronized (this) {
            if (finished) {
                return;
            }
            ended = true;
            cancel = stop;
        }
        LOG.warn(
                "The training process that launched this run is gone (its pipe to this process"
                        + " closed): stopping the run");
        Thread halt =
                new Thread(
                        () -> {
                            try {
                                Thread.sleep(GRACE.toMillis());
                            } catch (InterruptedException e) {
                                return;
                            }
                            LOG.error(
                                    "The run did not stop within {} s of its launcher's end:"
                                            + " halting",
                                    GRACE.toSeconds());
                            stopChildren();
                            Path tmp = tmpDir;
                            if (tmp != null) {
                                FlinkSetup.clearTmp(tmp);
                            }
                            Runtime.getRuntime().halt(EXIT_LAUNCHER_GONE);
                        },
                        "minato-lifeline-halt");
        halt.setDaemon(true);
        halt.start();
        if (cancel != null) {
            cancel.run();
        } else {
            // Nothing runs yet: nothing to cancel, no checkpoint to keep.
            System.exit(EXIT_LAUNCHER_GONE);
        }
    }

    /**
     * Ends the processes this JVM started (none of the job's own today; a library's), which would
     * otherwise live on without it.
     */
    static void stopChildren() {
        ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly);
    }
}
