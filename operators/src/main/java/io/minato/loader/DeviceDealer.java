package io.minato.loader;

import io.minato.sample.SampleTask;

/**
 * Deals the samples one worker finishes to the devices: in turn (Minato's dealing, the default), or
 * each to the device its identity names (for training processes outside the job).
 *
 * <p>In turn: the samples go to the devices in the order they become ready, starting from the
 * worker's own subtask index. A device's batcher so takes every G-th ready sample, fast or slow,
 * and no device waits for a particular sample: were the device fixed by the sample's number, a slow
 * sample would hold up its device's batch while the others ran ahead, and in synchronous data
 * parallelism every device would wait for it at the next all-reduce. Each worker's deal is even to
 * within one sample per device, all W + S workers' together to within W + S; the group's idle steps
 * absorb the difference at the end.
 *
 * <p>By sample: the sample at position {@code p = epoch * N + index} of the run goes to device
 * {@code p mod G}, whichever worker finishes it and whenever. A device still takes its samples in
 * the order they become ready, so a slow one joins a later batch of its device rather than holding
 * one up. This is what a device served to a process outside the job needs: what that process has
 * trained is then a set of samples of its own device alone, and after any restore of the job its
 * samples come back to it and to no other (see {@code io.minato.trainer.serve}).
 */
public final class DeviceDealer {
    private final int devices;
    private final long samplesPerEpoch; // 0: in turn
    private int next;

    private DeviceDealer(int devices, int worker, long samplesPerEpoch) {
        if (devices < 1 || worker < 0 || samplesPerEpoch < 0) {
            throw new IllegalArgumentException(
                    "need devices >= 1, worker >= 0 and samples per epoch >= 0: "
                            + devices
                            + ", "
                            + worker
                            + ", "
                            + samplesPerEpoch);
        }
        this.devices = devices;
        this.samplesPerEpoch = samplesPerEpoch;
        this.next = worker % devices;
    }

    /** Deals in turn, starting with the device of {@code worker}'s index. */
    static DeviceDealer inTurn(int devices, int worker) {
        return new DeviceDealer(devices, worker, 0);
    }

    /** Deals each sample to the device of its position in the run, epochs of {@code n} samples. */
    static DeviceDealer bySample(int devices, long n) {
        if (n < 1) {
            throw new IllegalArgumentException("samples per epoch must be >= 1: " + n);
        }
        return new DeviceDealer(devices, 0, n);
    }

    /** The device of the sample of {@code task}, the next one this worker finished. */
    int next(SampleTask task) {
        if (samplesPerEpoch > 0) {
            return deviceOf(task.epoch(), task.index(), samplesPerEpoch, devices);
        }
        int device = next;
        next = next + 1 == devices ? 0 : next + 1;
        return device;
    }

    /** The device dealing by sample gives the sample ({@code epoch}, {@code index}). */
    public static int deviceOf(int epoch, long index, long samplesPerEpoch, int devices) {
        return (int) Math.floorMod(epoch * samplesPerEpoch + index, (long) devices);
    }
}
