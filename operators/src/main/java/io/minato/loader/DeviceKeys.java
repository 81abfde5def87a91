package io.minato.loader;

import java.io.Serializable;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * Keys that pin device d to subtask d of a keyed operator. Flink hashes keys into key groups, so
 * keyBy(d) may put two devices on one subtask; here each device gets the smallest key whose key
 * group lands on its own subtask.
 */
public final class DeviceKeys implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Fixed, so that keyed state restores onto the same key groups. */
    public static final int MAX_PARALLELISM = 128;

    private final int[] keyOfDevice;

    public DeviceKeys(int devices) {
        if (devices < 1 || devices > MAX_PARALLELISM) {
            throw new IllegalArgumentException(
                    "devices must be in 1.." + MAX_PARALLELISM + ": " + devices);
        }
        keyOfDevice = new int[devices];
        int found = 0;
        boolean[] taken = new boolean[devices];
        for (int key = 0; found < devices; key++) {
            int subtask =
                    KeyGroupRangeAssignment.assignKeyToParallelOperator(
                            key, MAX_PARALLELISM, devices);
            if (!taken[subtask]) {
                taken[subtask] = true;
                keyOfDevice[subtask] = key;
                found++;
            }
        }
    }

    public int devices() {
        return keyOfDevice.length;
    }

    public int keyOf(int device) {
        return keyOfDevice[device];
    }

    public int deviceOf(int key) {
        for (int d = 0; d < keyOfDevice.length; d++) {
            if (keyOfDevice[d] == key) {
                return d;
            }
        }
        throw new IllegalArgumentException("no device has key " + key);
    }
}
