package io.minato.trainer.serve;

import io.minato.sample.PreparedSample;
import io.minato.spi.SharedSample;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The header of a batch of samples in shared memory ({@link SharedSample}, the Python workload's):
 * each sample's file, size and layout, which the training process maps and collates itself. The
 * batch has no bytes of its own: nothing is written into the connection's slot or onto its socket.
 */
final class PythonSampleBatch {
    private PythonSampleBatch() {}

    /** Whether the batch's samples are in shared memory (all of them, or none). */
    static boolean holds(List<PreparedSample> samples) {
        boolean shared = samples.get(0).patch().sharedSample() != null;
        for (PreparedSample s : samples) {
            if ((s.patch().sharedSample() != null) != shared) {
                throw new IllegalArgumentException(
                        "a batch mixes samples in shared memory with samples of arrays");
            }
        }
        return shared;
    }

    /**
     * {@code python}: [file, bytes, layout] of each sample; {@code nbytes}: 0, what follows the
     * header.
     *
     * @throws IllegalStateException a sample prepared on another host, whose file is not here
     */
    static Map<String, Object> layout(List<PreparedSample> samples) {
        List<Object> files = new ArrayList<>(samples.size());
        for (PreparedSample s : samples) {
            SharedSample shared = s.patch().sharedSample();
            if (!shared.onThisHost()) {
                throw new IllegalStateException(
                        "sample "
                                + s.task().caseIndex()
                                + " of the Python dataset was prepared on "
                                + shared.host()
                                + " and is served from "
                                + SharedSample.thisHost()
                                + ": --workload python needs the TaskManagers that prepare and"
                                + " the ones that serve on one host (its samples stay in that"
                                + " host's shared memory)");
            }
            files.add(List.of(shared.file(), shared.bytes(), shared.layout()));
        }
        return Map.of("python", files, "nbytes", 0L);
    }
}
