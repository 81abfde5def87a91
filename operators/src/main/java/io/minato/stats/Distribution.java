package io.minato.stats;

import java.util.Arrays;

/** Collects values (times in milliseconds, say) and summarises them as percentiles and a sum. */
public final class Distribution {
    private double[] values = new double[64];
    private int count;

    public synchronized void add(double v) {
        if (count == values.length) {
            values = Arrays.copyOf(values, count * 2);
        }
        values[count++] = v;
    }

    public synchronized int count() {
        return count;
    }

    public synchronized Summary summary() {
        double[] sorted = Arrays.copyOf(values, count);
        Arrays.sort(sorted);
        double sum = 0;
        for (double v : sorted) {
            sum += v;
        }
        return new Summary(
                count,
                percentile(sorted, 50),
                percentile(sorted, 90),
                percentile(sorted, 99),
                count == 0 ? 0 : sorted[count - 1],
                sum);
    }

    /**
     * Nearest-rank percentile: the smallest value with at least p % of the values at or below it.
     */
    static double percentile(double[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p / 100 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length, rank) - 1)];
    }

    /** p50/p90/p99/max/sum of a distribution, as the report's prep_ms gives them. */
    public record Summary(int count, double p50, double p90, double p99, double max, double sum) {}
}
