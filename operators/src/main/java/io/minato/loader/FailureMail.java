package io.minato.loader;

import java.util.concurrent.CancellationException;
import java.util.concurrent.RejectedExecutionException;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.streaming.runtime.tasks.StreamTask;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.util.function.ThrowingRunnable;

/**
 * Brings a failure of a loader's own threads to its task thread at once, as mail. The in-order
 * loaders (PyTorch's and DJL's way) hand batches over only when the task thread next looks: at the
 * next element, barrier or end of input. Once the source had sent its last task, nothing came, and
 * a worker's failure (a file that does not decode, under {@code --on-bad-sample fail}) waited for
 * the next checkpoint, about 10 s an attempt. The mail runs {@code surface}, which throws it.
 */
public final class FailureMail {
    private final MailboxExecutor mailbox;
    private final ThrowingRunnable<? extends Exception> surface;
    private volatile boolean closed;

    FailureMail(MailboxExecutor mailbox, ThrowingRunnable<? extends Exception> surface) {
        this.mailbox = mailbox;
        this.surface = surface;
    }

    /** Mail to {@code task}'s whole mailbox, as {@link PreparingOperator}'s own. */
    public static FailureMail to(
            StreamTask<?, ?> task, ThrowingRunnable<? extends Exception> surface) {
        return new FailureMail(
                task.getMailboxExecutorFactory().createExecutor(TaskMailbox.MIN_PRIORITY), surface);
    }

    /** Called on the failing thread; nothing for an interruption, which closing causes. */
    public void failed(Throwable t) {
        if (closed || t instanceof InterruptedException || t instanceof CancellationException) {
            return;
        }
        try {
            mailbox.execute(surface, "a loader's worker failed");
        } catch (RejectedExecutionException e) {
            // The task is ending anyway.
        }
    }

    /** From now on a failure is the closing's own. */
    public void close() {
        closed = true;
    }
}
