package io.minato.loader;

import java.io.Serializable;
import java.util.Arrays;

/**
 * The fast/slow deadline of one augment worker: fixed, or adapted to recently observed preparation
 * times so that roughly the slowest {@link #SLOW_SHARE} of samples goes slow.
 *
 * <p>Auto keeps a window of recent outcomes. A sample cut off at its deadline is censored: only
 * known to be slower than the deadline. The timeout is the (1 - share) quantile of the window with
 * censored samples counted as infinitely slow; when more than the share was cut off, that quantile
 * is unknown and each further cut-off widens the timeout by half (up to a minute). Until the window
 * holds {@link #WARMUP} samples there is no deadline, so the first estimates are uncensored.
 */
public final class TimeoutPolicy implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final double SLOW_SHARE = 0.1;
    static final int WINDOW = 256;
    static final int WARMUP = 16;

    /** Never below this: a deadline shorter than a step boundary would send everything slow. */
    static final long MIN_NANOS = 100_000;

    /** Never above this while growing: a minute is no deadline at all for one sample. */
    static final long MAX_NANOS = 60_000_000_000L;

    private final long fixedNanos;

    /** The recent outcomes in arrival order (a ring), and the same values kept in order. */
    private final long[] window = new long[WINDOW];

    private final long[] sorted = new long[WINDOW];
    private int size;
    private int next;
    private long current = Long.MAX_VALUE;

    private TimeoutPolicy(long fixedNanos) {
        this.fixedNanos = fixedNanos;
        if (fixedNanos > 0) {
            current = fixedNanos;
        }
    }

    /** Parses {@code auto} or a number of milliseconds. */
    public static TimeoutPolicy parse(String spec) {
        if ("auto".equalsIgnoreCase(spec)) {
            return new TimeoutPolicy(0);
        }
        try {
            double ms = Double.parseDouble(spec);
            if (ms > 0 && Double.isFinite(ms)) {
                return new TimeoutPolicy((long) (ms * 1e6));
            }
        } catch (NumberFormatException e) {
            // falls through to the error below
        }
        throw new IllegalArgumentException(
                "--timeout must be 'auto' or a positive number of milliseconds, not '"
                        + spec
                        + "'");
    }

    /** A fresh policy with the same setting, for one worker. */
    public TimeoutPolicy copy() {
        return new TimeoutPolicy(fixedNanos);
    }

    public boolean isAuto() {
        return fixedNanos == 0;
    }

    /** The current deadline after a sample's start, in nanoseconds; Long.MAX_VALUE for none. */
    public long timeoutNanos() {
        return current;
    }

    /** A sample finished on the fast path after this many nanoseconds. */
    public void finished(long nanos) {
        record(nanos);
    }

    /** A sample was cut off at its deadline. */
    public void cutOff() {
        record(Long.MAX_VALUE);
    }

    private void record(long nanos) {
        if (!isAuto()) {
            return;
        }
        if (size == WINDOW) {
            remove(window[next]);
        } else {
            size++;
        }
        window[next] = nanos;
        next = (next + 1) % WINDOW;
        insert(nanos);
        if (size < WARMUP) {
            return;
        }
        long quantile = sorted[(int) Math.min(size - 1, Math.ceil((1 - SLOW_SHARE) * size) - 1)];
        if (quantile != Long.MAX_VALUE) {
            current = Math.max(MIN_NANOS, quantile);
        } else if (nanos == Long.MAX_VALUE) {
            // Too many cut off to know the quantile: each further cut-off widens the deadline by
            // half. A sample that finished says nothing new, and growing on those too had taken
            // the deadline to 16 minutes in a run whose window still held a burst of cut-offs.
            current = current > MAX_NANOS ? MAX_NANOS : Math.min(MAX_NANOS, current + current / 2);
        }
    }

    /*
     * The ordered copy is updated in place, one value out and one in, rather than sorted anew for
     * every sample: a window of 256 sorted per sample had cost the image workload's workers 0.8 %
     * of their CPU (async-profiler, 50 epochs of 400 images), and compiling the sort 0.1-0.2 s.
     * sorted[0, size) holds the window's values; insert expects size to count the new value.
     */

    private void remove(long value) {
        int at = Arrays.binarySearch(sorted, 0, size, value);
        System.arraycopy(sorted, at + 1, sorted, at, size - at - 1);
    }

    private void insert(long value) {
        int at = Arrays.binarySearch(sorted, 0, size - 1, value);
        if (at < 0) {
            at = -at - 1;
        }
        System.arraycopy(sorted, at, sorted, at + 1, size - 1 - at);
        sorted[at] = value;
    }
}
