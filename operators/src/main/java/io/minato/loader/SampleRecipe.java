package io.minato.loader;

import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.Workload;
import io.minato.transform.Patch;
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
        List<PreparedSample> samples = batch.samples();
        List<PreparedSample> full = null;
        for (int i = 0; i < samples.size(); i++) {
            PreparedSample s = samples.get(i);
            if (s.patch() != null) {
                continue;
            }
            if (full == null) {
                full = new ArrayList<>(samples);
            }
            Patch patch = workload.prepare(s.task().key(), s.task().caseIndex());
            full.set(i, s.withPatch(patch));
        }
        return full == null ? batch : new Batch(batch.device(), batch.sequence(), full);
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
