package io.minato.loader;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/** Waiting for the threads an operator owns. */
public final class Threads {
    private Threads() {}

    /**
     * Waits up to {@code millis} for {@code thread} to end, through interrupts of the calling
     * thread, whose interrupt is kept for it: a cancelled task's thread is interrupted, and a
     * thread in native code (libtorch) must still be waited for before what it reads is freed.
     *
     * @return whether {@code thread} ended
     */
    public static boolean awaitEnd(Thread thread, long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        boolean interrupted = false;
        long left;
        while (thread.isAlive() && (left = deadline - System.nanoTime()) > 0) {
            try {
                thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }

    /**
     * Stops {@code executor}'s tasks and waits for all of them to end, through interrupts of the
     * calling thread, whose interrupt is kept for it: as {@link #awaitEnd}, with no bound.
     */
    public static void stopAndAwait(ExecutorService executor) {
        executor.shutdownNow();
        boolean interrupted = false;
        while (true) {
            try {
                if (executor.awaitTermination(1, TimeUnit.SECONDS)) {
                    break;
                }
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
