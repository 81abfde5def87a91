package io.minato.spi;

import java.util.ArrayDeque;
import java.util.HashMap;

/**
 * Patch arrays given back after their sample was trained, for the next sample of the same shape.
 *
 * <p>A patch at 128^3 is a 8 MiB image and a 2 MiB label, allocated for every sample: for G1 both
 * are humongous objects, and while the heap grows the kernel hands each one never-touched pages to
 * zero (measured: a third of a CPU-bound run's kernel time). A trainer gives a sample's arrays back
 * once its step has ended and nothing refers to them ({@link #give}); preparation takes them
 * ({@link #take}) and overwrites every voxel, so reused arrays need no clearing.
 *
 * <p>Bounded in bytes (what waits here is garbage to anyone else); past the bound a given patch is
 * left to the garbage collector. One pool per JVM, shared by every job in it.
 */
public final class PatchPool {
    private static final PatchPool JVM =
            new PatchPool(Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 16));

    private final long boundBytes;

    /** Free arrays by their sizes: input values and target bytes. */
    private record Sizes(long voxels, int labelBytes) {}

    private final HashMap<Sizes, ArrayDeque<Patch>> free = new HashMap<>();
    private long bytes;
    private long reused;
    private long allocated;

    PatchPool(long boundBytes) {
        this.boundBytes = boundBytes;
    }

    /** This JVM's pool. */
    public static PatchPool jvm() {
        return JVM;
    }

    /**
     * Arrays for a patch of {@code shape} with a dense target (one byte per value): given-back ones
     * if any, else new ones.
     */
    public Patch take(Shape3 shape) {
        return take(shape, Math.toIntExact(shape.voxels()));
    }

    /** Arrays for a patch of {@code shape} with a target of {@code labelBytes} bytes. */
    public Patch take(Shape3 shape, int labelBytes) {
        Patch old;
        synchronized (this) {
            ArrayDeque<Patch> q = free.get(new Sizes(shape.voxels(), labelBytes));
            old = q == null ? null : q.pollFirst();
            if (old != null) {
                bytes -= old.bytes();
                reused++;
            } else {
                allocated++;
            }
        }
        if (old == null) {
            int n = Math.toIntExact(shape.voxels());
            return new Patch(shape, new float[n], new byte[labelBytes]);
        }
        return old.shape().equals(shape) ? old : new Patch(shape, old.image(), old.label());
    }

    /**
     * Gives {@code patch}'s arrays back. The caller must hold the only reference to them: whatever
     * takes them next overwrites them.
     */
    public void give(Patch patch) {
        if (patch == null) {
            return;
        }
        long size = patch.bytes();
        synchronized (this) {
            if (bytes + size > boundBytes) {
                return;
            }
            free.computeIfAbsent(
                            new Sizes(patch.shape().voxels(), patch.label().length),
                            v -> new ArrayDeque<>())
                    .addLast(patch);
            bytes += size;
        }
    }

    /** Takes served from given-back arrays. */
    public synchronized long reused() {
        return reused;
    }

    /** Takes that allocated new arrays. */
    public synchronized long allocated() {
        return allocated;
    }

    /** Bytes waiting here now. */
    public synchronized long bytes() {
        return bytes;
    }
}
