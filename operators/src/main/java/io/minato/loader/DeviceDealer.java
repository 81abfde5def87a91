package io.minato.loader;

/**
 * Deals the samples one worker finishes to the devices in turn, in the order they become ready,
 * starting from the worker's own subtask index.
 *
 * <p>A device's batcher so takes every G-th ready sample, fast or slow, and no device waits for a
 * particular sample: were the device fixed by the sample's number, a slow sample would hold up its
 * device's batch while the others ran ahead, and in synchronous data parallelism every device would
 * wait for it at the next all-reduce. Each worker's deal is even to within one sample per device,
 * all W + S workers' together to within W + S; the group's idle steps absorb the difference at the
 * end.
 */
final class DeviceDealer {
    private final int devices;
    private int next;

    DeviceDealer(int devices, int worker) {
        if (devices < 1 || worker < 0) {
            throw new IllegalArgumentException(
                    "need devices >= 1 and worker >= 0: " + devices + ", " + worker);
        }
        this.devices = devices;
        this.next = worker % devices;
    }

    /** The device of the next ready sample. */
    int next() {
        int device = next;
        next = next + 1 == devices ? 0 : next + 1;
        return device;
    }
}
