package io.minato.workload.images;

import io.minato.data.SplitMix64;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;
import javax.imageio.ImageIO;

/**
 * Writes a deterministic image classification set in the usual layout, {@code
 * out/class_NN/img_NNNNN.png|jpg}: no data set can be downloaded here, and a loader's images
 * workload needs images of widely varying size (decoding cost grows with it: the workload's tail).
 *
 * <p>Image k is class {@code k % classes}. Its size is log-uniform in [{@code minEdge}, {@code
 * maxEdge}] with a random aspect ratio; even images are PNG, odd ones JPEG. A class is a texture a
 * CNN can learn from any crop: stripes at the class's own angle, in the class's own hue, at a
 * random frequency and phase, under pixel noise. The same seed gives the same bytes.
 */
public final class ImageSetGenerator {
    public static final int DEFAULT_IMAGES = 240;
    public static final int DEFAULT_CLASSES = 4;
    public static final int DEFAULT_MIN_EDGE = 64;
    public static final int DEFAULT_MAX_EDGE = 1024;

    private final int images;
    private final int classes;
    private final long seed;
    private final int minEdge;
    private final int maxEdge;

    private ImageSetGenerator(Builder b) {
        this.images = b.images;
        this.classes = b.classes;
        this.seed = b.seed;
        this.minEdge = b.minEdge;
        this.maxEdge = b.maxEdge;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** One written image. */
    public record GeneratedImage(Path file, int label, int width, int height, long bytes) {}

    /** Writes every image into {@code out} (on all cores), each under a temporary name first. */
    public List<GeneratedImage> generate(Path out) throws IOException {
        for (int c = 0; c < classes; c++) {
            Files.createDirectories(out.resolve(className(c)));
        }
        GeneratedImage[] written = new GeneratedImage[images];
        IOException[] failed = new IOException[1];
        IntStream.range(0, images)
                .parallel()
                .forEach(
                        k -> {
                            try {
                                written[k] = write(out, k);
                            } catch (IOException e) {
                                synchronized (failed) {
                                    failed[0] = failed[0] == null ? e : failed[0];
                                }
                            }
                        });
        if (failed[0] != null) {
            throw failed[0];
        }
        return List.of(written);
    }

    private String className(int c) {
        return String.format(Locale.ROOT, "class_%02d", c);
    }

    private GeneratedImage write(Path out, int k) throws IOException {
        int label = k % classes;
        SplitMix64 r = SplitMix64.stream(seed, k);
        double edge = Math.exp(r.uniform(Math.log(minEdge), Math.log(maxEdge + 1)));
        double aspect = Math.exp(r.uniform(Math.log(0.6), Math.log(1.6)));
        int w = Math.max(1, (int) Math.min(maxEdge, edge * Math.sqrt(aspect)));
        int h = Math.max(1, (int) Math.min(maxEdge, edge / Math.sqrt(aspect)));
        BufferedImage image = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        double angle = Math.PI * label / classes + r.uniform(-0.1, 0.1);
        double cos = Math.cos(angle);
        double sin = Math.sin(angle);
        // Stripes of 6-24 px whatever the image size: a crop of any scale shows some.
        double period = r.uniform(6, 24);
        double phase = r.uniform(0, 2 * Math.PI);
        float hue = (float) label / classes;
        int[] dark = rgb(hue, 0.8f, 0.25f + (float) r.uniform(0, 0.1));
        int[] light = rgb(hue, 0.5f, 0.85f + (float) r.uniform(0, 0.1));
        int[] row = new int[w];
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                double t = 0.5 + 0.5 * Math.sin(2 * Math.PI * (x * cos + y * sin) / period + phase);
                int noise = (int) (r.gaussian() * 12);
                int px = 0;
                for (int c = 0; c < 3; c++) {
                    int v = (int) (dark[c] + t * (light[c] - dark[c])) + noise;
                    px = px << 8 | Math.max(0, Math.min(255, v));
                }
                row[x] = px;
            }
            image.setRGB(0, y, w, 1, row, 0, w);
        }
        String format = k % 2 == 0 ? "png" : "jpg";
        Path file =
                out.resolve(className(label))
                        .resolve(String.format(Locale.ROOT, "img_%05d.%s", k, format));
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        try (OutputStream os = Files.newOutputStream(tmp)) {
            if (!ImageIO.write(image, format, os)) {
                throw new IOException("no ImageIO writer for " + format);
            }
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return new GeneratedImage(file, label, w, h, Files.size(file));
    }

    /** HSV with full value scaled by {@code v}: the class's hue, light or dark. */
    private static int[] rgb(float hue, float saturation, float value) {
        int packed = java.awt.Color.HSBtoRGB(hue, saturation, value);
        return new int[] {(packed >> 16) & 0xFF, (packed >> 8) & 0xFF, packed & 0xFF};
    }

    /** Builds an {@link ImageSetGenerator}: {@code opt*} with the defaults above. */
    public static final class Builder {
        private int images = DEFAULT_IMAGES;
        private int classes = DEFAULT_CLASSES;
        private long seed = SplitMix64.DEFAULT_SEED;
        private int minEdge = DEFAULT_MIN_EDGE;
        private int maxEdge = DEFAULT_MAX_EDGE;

        private Builder() {}

        public Builder optImages(int images) {
            if (images < 1) {
                throw new IllegalArgumentException("images must be >= 1: " + images);
            }
            this.images = images;
            return this;
        }

        public Builder optClasses(int classes) {
            if (classes < 2) {
                throw new IllegalArgumentException("classes must be >= 2: " + classes);
            }
            this.classes = classes;
            return this;
        }

        public Builder optSeed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Image edges, log-uniform between these (pixels). */
        public Builder optEdges(int minEdge, int maxEdge) {
            if (minEdge < 1 || maxEdge < minEdge) {
                throw new IllegalArgumentException(
                        "edges must satisfy 1 <= min <= max: " + minEdge + ", " + maxEdge);
            }
            this.minEdge = minEdge;
            this.maxEdge = maxEdge;
            return this;
        }

        public ImageSetGenerator build() {
            if (classes > images) {
                throw new IllegalArgumentException(
                        classes + " classes need at least as many images, not " + images);
            }
            return new ImageSetGenerator(this);
        }
    }

    /** The classes' folder names, for tests and messages. */
    List<String> classNames() {
        List<String> names = new ArrayList<>();
        for (int c = 0; c < classes; c++) {
            names.add(className(c));
        }
        return names;
    }
}
