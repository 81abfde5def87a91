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
 * <p>The byte arrays that a large sample's pieces are received into ({@link #takeBytes}) wait here
 * too, between one sample's pieces and the next's: a patch-128 sample arrives as 10 MiB of them.
 *
 * <p>Bounded in bytes, patches and byte arrays together (what waits here is garbage to anyone
 * else); past the bound a given array is left to the garbage collector. One pool per JVM, shared by
 * every job in it.
 */
public final class PatchPool {
    private static final PatchPool JVM =
            new PatchPool(Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 16));

    private final long boundBytes;

    /** Free arrays by their sizes: input values and target bytes. */
    private record Sizes(long voxels, int labelBytes) {}

    private final HashMap<Sizes, ArrayDeque<Patch>> free = new HashMap<>();

    /** Free byte arrays by their lengths ({@link #capacity} of what was asked). */
    private final HashMap<Integer, ArrayDeque<byte[]>> freeBytes = new HashMap<>();

    /**
     * Byte arrays are rounded up to this, so that pieces of slightly different lengths (the last
     * piece of samples of other shapes) share arrays.
     */
    public static final int BYTES_GRAIN = 4096;

    private long bytes;
    private long reused;
    private long allocated;

    /** A pool of its own, holding at most {@code boundBytes} (the JVM's is {@link #jvm}). */
    public PatchPool(long boundBytes) {
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
        if (patch == null || patch.sharedSample() != null) {
            return; // a shared sample has no arrays here
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

    /**
     * A byte array of at least {@code length} bytes (rounded up to {@link #BYTES_GRAIN}): a
     * given-back one if any, else a new one. Its content is whatever was there: the caller writes
     * the bytes it uses.
     */
    public byte[] takeBytes(int length) {
        if (length < 0) {
            throw new IllegalArgumentException("byte array of " + length + " bytes");
        }
        int capacity = capacity(length);
        byte[] old;
        synchronized (this) {
            ArrayDeque<byte[]> q = freeBytes.get(capacity);
            old = q == null ? null : q.pollFirst();
            if (old != null) {
                bytes -= old.length;
                reused++;
            } else {
                allocated++;
            }
        }
        return old != null ? old : new byte[capacity];
    }

    /**
     * Gives back an array that {@link #takeBytes} gave. The caller must hold the only reference to
     * it; arrays of other lengths are left to the garbage collector.
     */
    public void giveBytes(byte[] array) {
        if (array == null || array.length == 0 || array.length % BYTES_GRAIN != 0) {
            return;
        }
        synchronized (this) {
            if (bytes + array.length > boundBytes) {
                return;
            }
            freeBytes.computeIfAbsent(array.length, n -> new ArrayDeque<>()).addLast(array);
            bytes += array.length;
        }
    }

    private static int capacity(int length) {
        long grains = Math.max(1, ((long) length + BYTES_GRAIN - 1) / BYTES_GRAIN);
        long capacity = grains * BYTES_GRAIN;
        return capacity > Integer.MAX_VALUE - BYTES_GRAIN ? length : (int) capacity;
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
