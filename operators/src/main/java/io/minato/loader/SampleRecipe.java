package io.minato.loader;

import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import io.minato.spi.Workload;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * How a sample is prepared from its identity alone: the workload. Checkpoints and the in-JVM
 * handoff move identities, not patches; where a sample arrives without its patch (after a restore,
 * or from another TaskManager) the trainer prepares it again with this recipe, and gets the
 * bit-identical patch.
 */
public final class SampleRecipe implements Serializable {
    private static final long serialVersionUID = 1L;

    private final Workload<?> workload;

    public SampleRecipe(Workload<?> workload) {
        this.workload = workload;
    }

    public Workload<?> workload() {
        return workload;
    }

    /** The batch with every sample's patch present; prepares those that arrived without. */
    public Batch materialize(Batch batch) throws BadInputException {
        return materialize(batch, null);
    }

    /**
     * The batch with every sample's patch present, prepared where it arrived without, leaving out
     * those {@code leftOut} quarantines ({@code --on-bad-sample skip}); null: bad input throws.
     */
    public Batch materialize(Batch batch, LeftOut leftOut) throws BadInputException {
        List<PreparedSample> samples = batch.samples();
        List<PreparedSample> full = null;
        boolean dropped = false;
        for (int i = 0; i < samples.size(); i++) {
            PreparedSample s = samples.get(i);
            if (s.patch() != null) {
                continue;
            }
            if (full == null) {
                full = new ArrayList<>(samples);
            }
            if (leftOut != null && leftOut.quarantined(s.task())) {
                leftOut.skip();
                full.set(i, null);
                dropped = true;
                continue;
            }
            try {
                full.set(i, s.withPatch(workload.prepare(s.task().key(), s.task().caseIndex())));
            } catch (BadInputException bad) {
                if (leftOut == null) {
                    throw bad;
                }
                leftOut.quarantine(s.task(), bad);
                full.set(i, null);
                dropped = true;
            }
        }
        if (full == null) {
            return batch;
        }
        if (dropped) {
            full.removeIf(java.util.Objects::isNull);
        }
        return batch.withSamples(full);
    }

    /** What a trainer that prepares samples again leaves out under {@code --on-bad-sample skip}. */
    public interface LeftOut {
        /** Whether the sample's source is quarantined already. */
        boolean quarantined(SampleTask task);

        /** Quarantines the sample's source for {@code bad}, and counts the sample as left out. */
        void quarantine(SampleTask task, BadInputException bad);

        /** Counts one more sample of a quarantined source as left out. */
        void skip();
    }

    /** Samples of the batch that arrived without their patch. */
    public static int missing(Batch batch) {
        int n = 0;
        for (PreparedSample s : batch.samples()) {
            n += s.patch() == null ? 1 : 0;
        }
        return n;
    }
}
