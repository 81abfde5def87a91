package io.minato.workload.kits19;

import io.minato.data.SplitMix64;
import io.minato.npy.DType;
import io.minato.npy.NpyWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Writes a KiTS19-like dataset: {@code case_%05d_x.npy} (float32) and {@code case_%05d_y.npy}
 * (uint8 labels), shaped (1, D, H, W) and spread like KiTS19 after MLPerf's offline preprocessing.
 *
 * <p>The bytes depend only on (cases, scale, seed): each case is drawn from its own stream, so the
 * thread count changes the speed, never the data.
 */
public final class KitsLikeGenerator {

    public static final int DEFAULT_CASES = 40;
    public static final double DEFAULT_SCALE = 0.25;
    public static final long DEFAULT_SEED = SplitMix64.DEFAULT_SEED;
    public static final double MAX_SCALE = 4.0;

    // A slab of slices is written at once: big enough for few system calls, small enough that a
    // full-size volume (up to ~400 MB) is never held in memory.
    private static final int SLAB_BYTES = 4 << 20;

    private final int cases;
    private final double scale;
    private final long seed;
    private final int threads;

    private KitsLikeGenerator(Builder builder) {
        this.cases = builder.cases;
        this.scale = builder.scale;
        this.seed = builder.seed;
        this.threads = builder.threads;
    }

    public static Builder builder() {
        return new Builder();
    }

    public int cases() {
        return cases;
    }

    public double scale() {
        return scale;
    }

    public long seed() {
        return seed;
    }

    public int threads() {
        return threads;
    }

    /** The image file of a case, {@code case_%05d_x.npy}. */
    public static Path imagePath(Path dir, int caseId) {
        return dir.resolve(String.format(Locale.ROOT, "case_%05d_x.npy", caseId));
    }

    /** The label file of a case, {@code case_%05d_y.npy}. */
    public static Path labelPath(Path dir, int caseId) {
        return dir.resolve(String.format(Locale.ROOT, "case_%05d_y.npy", caseId));
    }

    /**
     * Writes every case into {@code outDir} (created if missing); see {@link #generate(Path,
     * Consumer)}.
     */
    public List<GeneratedCase> generate(Path outDir) throws IOException {
        return generate(outDir, c -> {});
    }

    /**
     * Writes cases 0..N-1 into {@code outDir}, replacing case files of the same names and leaving
     * other files alone. {@code onCase} hears of each case as it finishes, on a worker thread.
     *
     * @return the cases in id order
     */
    public List<GeneratedCase> generate(Path outDir, Consumer<GeneratedCase> onCase)
            throws IOException {
        Files.createDirectories(outDir);
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, cases), daemons());
        try {
            List<Future<GeneratedCase>> futures = new ArrayList<>();
            for (int id = 0; id < cases; id++) {
                int caseId = id;
                futures.add(
                        pool.submit(
                                () -> {
                                    GeneratedCase done = writeCase(outDir, caseId);
                                    onCase.accept(done);
                                    return done;
                                }));
            }
            List<GeneratedCase> done = new ArrayList<>();
            for (Future<GeneratedCase> future : futures) {
                done.add(future.get());
            }
            return done;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IllegalStateException(cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while generating into " + outDir, e);
        } finally {
            pool.shutdownNow();
        }
    }

    private GeneratedCase writeCase(Path outDir, int caseId) throws IOException {
        KitsCase kase = new KitsCase(caseId, scale, seed);
        long[] shape = {1, kase.depth, kase.height, kase.width};
        int slice = kase.height * kase.width;
        int slabSlices = Math.max(1, Math.min(kase.depth, SLAB_BYTES / (slice * Float.BYTES)));
        ByteBuffer imageSlab =
                ByteBuffer.allocate(slabSlices * slice * Float.BYTES)
                        .order(ByteOrder.LITTLE_ENDIAN);
        FloatBuffer imageFloats = imageSlab.asFloatBuffer();
        ByteBuffer labelSlab = ByteBuffer.allocate(slabSlices * slice);
        float[] image = new float[slice];
        byte[] label = new byte[slice];
        Path imagePath = imagePath(outDir, caseId);
        Path labelPath = labelPath(outDir, caseId);
        try (NpyWriter.Stream x = NpyWriter.open(imagePath, DType.FLOAT32, shape);
                NpyWriter.Stream y = NpyWriter.open(labelPath, DType.UINT8, shape)) {
            for (int z = 0; z < kase.depth; z++) {
                kase.paintSlice(z, image, label);
                imageFloats.put(image);
                labelSlab.put(label);
                if (!labelSlab.hasRemaining() || z == kase.depth - 1) {
                    imageSlab.limit(imageFloats.position() * Float.BYTES).position(0);
                    x.write(imageSlab);
                    y.write(labelSlab.flip());
                    imageSlab.clear();
                    imageFloats.clear();
                    labelSlab.clear();
                }
            }
        }
        return new GeneratedCase(
                caseId,
                imagePath,
                labelPath,
                kase.depth,
                kase.height,
                kase.width,
                Files.size(imagePath) + Files.size(labelPath));
    }

    private static ThreadFactory daemons() {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            Thread thread = new Thread(task, "kits-generator-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** One written case: its files, its shape (1, depth, height, width) and bytes on disk. */
    public record GeneratedCase(
            int id, Path image, Path label, int depth, int height, int width, long bytes) {

        /** The shape as written into both headers. */
        public long[] shape() {
            return new long[] {1, depth, height, width};
        }
    }

    /** Builds a generator; every setting has a default, each is checked when set. */
    public static final class Builder {
        private int cases = DEFAULT_CASES;
        private double scale = DEFAULT_SCALE;
        private long seed = DEFAULT_SEED;
        private int threads = Runtime.getRuntime().availableProcessors();

        private Builder() {}

        /** Number of cases, ids 0..cases-1; at least 1. */
        public Builder optCases(int cases) {
            if (cases < 1) {
                throw new IllegalArgumentException("cases must be at least 1, got " + cases);
            }
            this.cases = cases;
            return this;
        }

        /** Multiplies every edge of every volume; in (0, 4]. */
        public Builder optScale(double scale) {
            if (!(scale > 0 && scale <= MAX_SCALE)) {
                throw new IllegalArgumentException(
                        "scale must be in (0, " + MAX_SCALE + "], got " + scale);
            }
            this.scale = scale;
            return this;
        }

        public Builder optSeed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Cases generated at once; each holds one slab of its volume in memory. */
        public Builder optThreads(int threads) {
            if (threads < 1) {
                throw new IllegalArgumentException("threads must be at least 1, got " + threads);
            }
            this.threads = threads;
            return this;
        }

        public KitsLikeGenerator build() {
            return new KitsLikeGenerator(this);
        }
    }
}
