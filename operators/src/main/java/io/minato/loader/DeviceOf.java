package io.minato.loader;

import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import org.apache.flink.api.java.functions.KeySelector;

/**
 * The device of a sample: its global number (epoch x N + index) modulo G, as a key that pins the
 * device to its own batcher subtask. Exactly balanced and stateless, so no extra operator (and no
 * extra network hop of every sample) is needed; a device's batcher still takes whichever of its
 * samples arrive first, fast or slow, so a slow sample never holds up a batch.
 */
public final class DeviceOf implements KeySelector<PreparedSample, Integer> {
    private static final long serialVersionUID = 1L;

    private final DeviceKeys keys;
    private final int casesPerEpoch;

    public DeviceOf(DeviceKeys keys, int casesPerEpoch) {
        this.keys = keys;
        this.casesPerEpoch = casesPerEpoch;
    }

    public int device(SampleTask t) {
        return (int) (((long) t.epoch() * casesPerEpoch + t.index()) % keys.devices());
    }

    @Override
    public Integer getKey(PreparedSample sample) {
        return keys.keyOf(device(sample.task()));
    }
}
