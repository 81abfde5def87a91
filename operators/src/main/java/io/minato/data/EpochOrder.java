package io.minato.data;

import io.minato.spi.SampleKey;
import io.minato.spi.SampleRandom;

/** The order of the cases in one epoch: a shuffle determined by (run seed, epoch). */
public final class EpochOrder {
    private EpochOrder() {}

    /** A permutation of 0..n-1, Fisher-Yates driven by the epoch's own random stream. */
    public static int[] permutation(long seed, int epoch, int n) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        SampleRandom random =
                SampleRandom.of(new SampleKey(seed, epoch, 0), SampleRandom.Stream.EPOCH_ORDER, 0);
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order;
    }
}
