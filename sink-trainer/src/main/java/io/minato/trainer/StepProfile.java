package io.minato.trainer;

import ai.djl.Device;
import ai.djl.util.cuda.CudaUtils;
import io.minato.loader.TaskManagerUsage;
import io.minato.stats.Distribution;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;

/**
 * Where a {@link DjlAccelerator}'s training steps spend their time, phase by phase, and the memory
 * they peak at: what {@code step-time} prints. Set with {@link DjlAccelerator#profile}; a training
 * run has none.
 *
 * <p>On a GPU a step's work is queued on the device's stream. The accelerator ends each phase with
 * a 4-byte read of a result the phase queued work for, and the read waits for everything queued
 * before it: a phase's time is its work's, not its launches'. The reads make the step a little
 * slower than an unprofiled one, which reads once. On the CPU the work is done when each call
 * returns, and nothing is read.
 *
 * <p>Peak memory: on the CPU the process's peak resident set over the profiled steps (Linux's
 * VmHWM, reset when profiling starts; from the process's start where the reset is refused); on a
 * GPU the most the device had in use at the end of any phase (CUDA's used memory: libtorch's cached
 * blocks included, as NVML shows it).
 */
public final class StepProfile {

    /** A step's phases, in order. */
    public enum Phase {
        /**
         * The batch into the step's buffers and onto the device. In a training run the next batch's
         * buffers fill while the step before runs, and only the copy onto the device is left to its
         * own step.
         */
        COPY,
        /** The network's forward pass and the loss. */
        FORWARD,
        /** The backward pass to every parameter's gradient. */
        BACKWARD,
        /** The optimizer's update of the parameters. */
        UPDATE
    }

    private static final Path CLEAR_REFS = Path.of("/proc/self/clear_refs");

    private final Device device;
    private final Map<Phase, Distribution> millis = new EnumMap<>(Phase.class);
    private long phaseStart;
    private long gpuPeak;

    /** A profile of steps on {@code device}; starts the peak's count now. */
    public StepProfile(Device device) {
        this.device = device;
        for (Phase p : Phase.values()) {
            millis.put(p, new Distribution());
        }
        if (!device.isGpu()) {
            try {
                // "5" resets the peak resident set (Linux 4.0 on).
                Files.writeString(CLEAR_REFS, "5", StandardCharsets.US_ASCII);
            } catch (IOException | UnsupportedOperationException e) {
                // The peak then counts from the process's start.
            }
        }
    }

    /** A step begins. */
    void begin() {
        phaseStart = System.nanoTime();
    }

    /** {@code phase} ended: the work it queued is done. */
    void ended(Phase phase) {
        long now = System.nanoTime();
        millis.get(phase).add((now - phaseStart) / 1e6);
        phaseStart = now;
        if (device.isGpu()) {
            gpuPeak = Math.max(gpuPeak, CudaUtils.getGpuMemory(device).getUsed());
        }
    }

    /** The median time of {@code phase} over the profiled steps, in milliseconds; 0 before any. */
    public double medianMillis(Phase phase) {
        return millis.get(phase).summary().p50();
    }

    /** The peak memory (see the class comment) in bytes; 0 where it cannot be read. */
    public long peakBytes() {
        return device.isGpu() ? gpuPeak : Math.max(0, TaskManagerUsage.peakRss());
    }
}
