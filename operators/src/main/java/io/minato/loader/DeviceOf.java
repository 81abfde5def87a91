package io.minato.loader;

import io.minato.sample.PreparedSample;
import org.apache.flink.api.java.functions.KeySelector;

/**
 * The batcher of a sample: the device its worker dealt it to ({@link PreparedSample#device()}, see
 * {@link DeviceDealer}), as a key that pins the device to its own batcher subtask.
 */
public final class DeviceOf implements KeySelector<PreparedSample, Integer> {
    private static final long serialVersionUID = 1L;

    private final DeviceKeys keys;

    public DeviceOf(DeviceKeys keys) {
        this.keys = keys;
    }

    @Override
    public Integer getKey(PreparedSample sample) {
        int device = sample.device();
        if (device < 0 || device >= keys.devices()) {
            throw new IllegalStateException(
                    "sample (epoch "
                            + sample.task().epoch()
                            + ", index "
                            + sample.task().index()
                            + ") was dealt to device "
                            + device
                            + ", not one of the job's "
                            + keys.devices());
        }
        return keys.keyOf(device);
    }
}
