package io.minato.workload.images;

import io.minato.data.BadInputException;
import io.minato.spi.FileMemo;
import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import io.minato.spi.SampleKey;
import io.minato.spi.SampleRandom;
import io.minato.spi.Shape3;
import io.minato.spi.StepCursor;
import java.awt.image.BufferedImage;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.Arrays;
import java.util.Objects;

/**
 * torchvision's ImageNet training transforms of one image as resumable steps: decode,
 * RandomResizedCrop (the window, then an antialiased bilinear resize in slabs of rows, as PIL's),
 * RandomHorizontalFlip, ColorJitter (brightness, contrast, saturation in a random order) and
 * Normalize, into a float CHW patch of (3, size, size) whose target is the image's class.
 *
 * <p>The cost is mostly the decode, which grows with the image: a large JPEG is the images
 * workload's slow sample. The decoded pixels depend on the file alone, so they are remembered
 * ({@link FileMemo}, within its memory bound) and a later epoch's sample of the same image starts
 * at its crop. Every random choice comes from a {@link SampleRandom} stream keyed by the sample, so
 * a preparation resumed elsewhere ends as the same bytes. Between the decode and the end of the
 * resize the state holds the decoded pixels; after, only the patch.
 */
public final class ImagePreparation extends StepCursor<EncodedImage, ImagePreparation.Step> {

    /** The steps, in order; RESIZE runs once per slab of output rows. */
    public enum Step {
        DECODE("decode"),
        CROP("RandomResizedCrop"),
        RESIZE("RandomResizedCrop"),
        FLIP("RandomHorizontalFlip"),
        JITTER("ColorJitter"),
        NORMALIZE("Normalize"),
        DONE("done");

        private final String transform;

        Step(String transform) {
            this.transform = transform;
        }

        /** The torchvision transform this step is (a part of); decoding is PIL's. */
        public String transform() {
            return transform;
        }
    }

    /** An image's decoded pixels, 0xRRGGBB row by row: what {@link FileMemo} keeps. */
    public record Decoded(int width, int height, int[] rgb) {

        /** What it holds in memory. */
        public long bytes() {
            return 4L * rgb.length + 32;
        }
    }

    private final ImageConfig config;
    private final FileMemo<Decoded> memo;
    private int label;
    private int width;
    private int height;

    /**
     * Decoded pixels, 0xRRGGBB row by row; between DECODE and the end of RESIZE. Never written: it
     * may be the memo's, shared by other samples of the same image.
     */
    private int[] rgb;

    /** Whether {@link #rgb} is the memo's: held by it, not by this sample. */
    private boolean sharedPixels;

    /** The crop window in the decoded image: top, left, height, width. */
    private int top;

    private int left;
    private int cropHeight;
    private int cropWidth;
    private int rowCursor;

    ImagePreparation(SampleKey key, ImageConfig config, FileMemo<Decoded> memo) {
        super(key, Step.DECODE, Step.DONE);
        this.config = Objects.requireNonNull(config);
        this.memo = Objects.requireNonNull(memo);
    }

    @Override
    public String stepName() {
        return step.transform();
    }

    @Override
    public void advance(EncodedImage source) throws BadInputException {
        switch (step) {
            case DECODE -> decode(source);
            case CROP -> crop();
            case RESIZE -> resizeSlab();
            case FLIP -> flip();
            case JITTER -> jitter();
            case NORMALIZE -> normalize();
            case DONE -> throw advancedWhenDone();
        }
    }

    /** The image's pixels: remembered from an earlier sample of it, or decoded (and remembered). */
    private void decode(EncodedImage source) throws BadInputException {
        label = source.file().label();
        FileMemo.Lookup<Decoded> known = memo.lookup(source.file().file());
        Decoded decoded = known.value();
        sharedPixels = decoded != null;
        if (decoded == null) {
            BufferedImage image = ImageDecoding.decodeImage(source);
            decoded = new Decoded(image.getWidth(), image.getHeight(), ImageDecoding.pixels(image));
            sharedPixels = known.remember(decoded);
        }
        width = decoded.width();
        height = decoded.height();
        rgb = decoded.rgb();
        step = Step.CROP;
    }

    /** torchvision's RandomResizedCrop.get_params: ten tries, then a centre crop. */
    private void crop() {
        int[] window =
                cropWindow(
                        width,
                        height,
                        config,
                        SampleRandom.of(key, SampleRandom.Stream.IMAGE_CROP, 0));
        top = window[0];
        left = window[1];
        cropHeight = window[2];
        cropWidth = window[3];
        step = Step.RESIZE;
    }

    /** {top, left, height, width} of the crop of a {@code w} x {@code h} image. */
    static int[] cropWindow(int w, int h, ImageConfig config, SampleRandom random) {
        double area = (double) w * h;
        double logMin = Math.log(config.ratioMin());
        double logMax = Math.log(config.ratioMax());
        for (int attempt = 0; attempt < 10; attempt++) {
            double target = area * random.nextDouble(config.scaleMin(), config.scaleMax());
            double aspect = Math.exp(random.nextDouble(logMin, logMax));
            int cw = (int) Math.rint(Math.sqrt(target * aspect));
            int ch = (int) Math.rint(Math.sqrt(target / aspect));
            if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
                int i = random.nextInt(h - ch + 1);
                int j = random.nextInt(w - cw + 1);
                return new int[] {i, j, ch, cw};
            }
        }
        double ratio = (double) w / h;
        int cw;
        int ch;
        if (ratio < config.ratioMin()) {
            cw = w;
            ch = (int) Math.rint(cw / config.ratioMin());
        } else if (ratio > config.ratioMax()) {
            ch = h;
            cw = (int) Math.rint(ch * config.ratioMax());
        } else {
            cw = w;
            ch = h;
        }
        return new int[] {(h - ch) / 2, (w - cw) / 2, ch, cw};
    }

    private void resizeSlab() {
        int s = config.size();
        if (patch == null) {
            patch = PatchPool.jvm().take(new Shape3(3, s, s), Patch.CLASS_BYTES);
            rowCursor = 0;
        }
        int rows = (int) Math.max(1, Math.min(s, config.pixelsPerStep() / s));
        int end = Math.min(s, rowCursor + rows);
        resize(rgb, width, top, left, cropHeight, cropWidth, patch.image(), s, rowCursor, end);
        rowCursor = end;
        if (rowCursor == s) {
            rgb = null; // the decoded pixels are not needed any more
            rowCursor = 0;
            step = Step.FLIP;
        }
    }

    /**
     * Bilinear resize of the window (top, left, ch, cw) of {@code rgb} to {@code s} x {@code s}, as
     * torchvision's RandomResizedCrop gives it (PIL's resize of the cropped image, antialiased):
     * output rows [from, to), written as channel planes of values in [0, 1] (ToTensor's scale).
     */
    static void resize(
            int[] rgb,
            int stride,
            int top,
            int left,
            int ch,
            int cw,
            float[] out,
            int s,
            int from,
            int to) {
        resize(rgb, stride, new Axis(left, cw, s, 0, s), new Axis(top, ch, s, 0, s), out, from, to);
    }

    /**
     * One axis of a resample as PIL's bilinear filter does it (Pillow's {@code precompute_coeffs}
     * and {@code normalize_coeffs_8bpc}): output {@code i} of {@code outLen} is centred at {@code
     * (i + 0.5) * scale} input pixels, {@code scale = inLen / outLen}, and weighs the input pixels
     * within {@code max(scale, 1)} of it by a triangle stretched to that support, renormalised; so
     * a downscale averages every pixel it covers instead of sampling two. The weights are
     * fixed-point with {@link #PRECISION_BITS} bits, as PIL's for 8-bit images. Inputs are {@code
     * [in0, in0 + inLen)} and beyond them nothing (the weights near an edge are renormalised, as in
     * a resize of the window alone); the outputs kept are {@code [offset, offset + n)}.
     */
    static final class Axis {
        /** PIL's: 32 bits less 8 for the values and 2 of headroom. */
        static final int PRECISION_BITS = 32 - 8 - 2;

        final int n;
        final int taps;
        final int[] first; // the first input pixel of each output
        final int[] count;
        final int[] weights; // taps per output

        Axis(int in0, int inLen, int outLen, int offset, int n) {
            double scale = (double) inLen / outLen;
            double filterScale = Math.max(scale, 1.0);
            double support = filterScale; // the bilinear filter's support is 1
            double inverse = 1.0 / filterScale;
            this.n = n;
            this.taps = (int) Math.ceil(support) * 2 + 1;
            first = new int[n];
            count = new int[n];
            weights = new int[n * taps];
            double[] w = new double[taps];
            for (int i = 0; i < n; i++) {
                double centre = (offset + i + 0.5) * scale;
                // PIL's rounding: a cast truncates toward zero, as C's does.
                int min = Math.max((int) (centre - support + 0.5), 0);
                int max = Math.min((int) (centre + support + 0.5), inLen) - min;
                double total = 0;
                for (int x = 0; x < max; x++) {
                    double t = Math.abs((x + min - centre + 0.5) * inverse);
                    w[x] = t < 1 ? 1 - t : 0;
                    total += w[x];
                }
                first[i] = in0 + min;
                count[i] = max;
                for (int x = 0; x < max; x++) {
                    double k = (total != 0 ? w[x] / total : w[x]) * (1 << PRECISION_BITS);
                    weights[i * taps + x] = (int) (k < 0 ? k - 0.5 : k + 0.5);
                }
            }
        }
    }

    /**
     * A worker's resize buffers, kept between samples: zeroing fresh ones for every slab of a large
     * crop took 8.6 % of the workers' time (async-profiler, 48 epochs of the images).
     */
    private static final class Scratch {
        byte[] red = new byte[0];
        byte[] green = new byte[0];
        byte[] blue = new byte[0];
        int[] sumRed = new int[0];
        int[] sumGreen = new int[0];
        int[] sumBlue = new int[0];

        /** These buffers, grown to hold {@code plane} bytes a channel and {@code row} sums. */
        Scratch atLeast(int plane, int row) {
            if (red.length < plane) {
                red = new byte[plane];
                green = new byte[plane];
                blue = new byte[plane];
            }
            if (sumRed.length < row) {
                sumRed = new int[row];
                sumGreen = new int[row];
                sumBlue = new int[row];
            }
            return this;
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /** PIL's {@code clip8}: a fixed-point sum back to a byte. */
    private static int clip8(int sum) {
        int v = sum >> Axis.PRECISION_BITS;
        return v < 0 ? 0 : Math.min(v, 255);
    }

    /**
     * Resamples {@code rgb} (rows of {@code stride} pixels) along {@code xs} and {@code ys} into
     * the channel planes of {@code out} ({@code xs.n} x {@code ys.n}, each value a byte over 255),
     * output rows [from, to): a horizontal pass over the input rows those outputs need, rounded to
     * bytes, then a vertical one, as PIL does for an RGB image, so the bytes are PIL's.
     */
    static void resize(int[] rgb, int stride, Axis xs, Axis ys, float[] out, int from, int to) {
        if (from >= to) {
            return;
        }
        int w = xs.n;
        int rowFirst = ys.first[from];
        int rowEnd = rowFirst;
        for (int oy = from; oy < to; oy++) {
            rowEnd = Math.max(rowEnd, ys.first[oy] + ys.count[oy]);
        }
        int half = 1 << (Axis.PRECISION_BITS - 1);
        // The rows resampled across, one plane of bytes a channel (PIL's intermediate image), in
        // this thread's scratch: every value read is written first.
        int rows = rowEnd - rowFirst;
        Scratch scratch = SCRATCH.get().atLeast(rows * w, w);
        byte[] acrossR = scratch.red;
        byte[] acrossG = scratch.green;
        byte[] acrossB = scratch.blue;
        for (int r = 0; r < rows; r++) {
            int base = (rowFirst + r) * stride;
            int o = r * w;
            for (int ox = 0; ox < w; ox++) {
                int x0 = base + xs.first[ox];
                int k0 = ox * xs.taps;
                int sr = half;
                int sg = half;
                int sb = half;
                for (int k = 0, n = xs.count[ox]; k < n; k++) {
                    int px = rgb[x0 + k];
                    int wk = xs.weights[k0 + k];
                    sr += ((px >>> 16) & 0xFF) * wk;
                    sg += ((px >>> 8) & 0xFF) * wk;
                    sb += (px & 0xFF) * wk;
                }
                acrossR[o + ox] = (byte) clip8(sr);
                acrossG[o + ox] = (byte) clip8(sg);
                acrossB[o + ox] = (byte) clip8(sb);
            }
        }
        // Down the columns a row of weights at a time, so that the inner loops run along rows.
        int plane = w * ys.n;
        int[] sr = scratch.sumRed;
        int[] sg = scratch.sumGreen;
        int[] sb = scratch.sumBlue;
        for (int oy = from; oy < to; oy++) {
            Arrays.fill(sr, 0, w, half);
            Arrays.fill(sg, 0, w, half);
            Arrays.fill(sb, 0, w, half);
            int r0 = ys.first[oy] - rowFirst;
            for (int k = 0, n = ys.count[oy]; k < n; k++) {
                int wk = ys.weights[oy * ys.taps + k];
                int row = (r0 + k) * w;
                for (int ox = 0; ox < w; ox++) {
                    sr[ox] += (acrossR[row + ox] & 0xFF) * wk;
                    sg[ox] += (acrossG[row + ox] & 0xFF) * wk;
                    sb[ox] += (acrossB[row + ox] & 0xFF) * wk;
                }
            }
            int o = oy * w;
            for (int ox = 0; ox < w; ox++) {
                out[o + ox] = clip8(sr[ox]) / 255f;
                out[plane + o + ox] = clip8(sg[ox]) / 255f;
                out[2 * plane + o + ox] = clip8(sb[ox]) / 255f;
            }
        }
    }

    private void flip() {
        if (SampleRandom.of(key, SampleRandom.Stream.IMAGE_FLIP, 0).nextDouble()
                < config.flipProbability()) {
            int s = config.size();
            float[] v = patch.image();
            for (int row = 0; row < 3 * s; row++) {
                for (int a = row * s, b = a + s - 1; a < b; a++, b--) {
                    float t = v[a];
                    v[a] = v[b];
                    v[b] = t;
                }
            }
        }
        step = Step.JITTER;
    }

    /** ColorJitter: brightness, contrast and saturation factors, applied in a random order. */
    private void jitter() {
        SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.IMAGE_JITTER, 0);
        int[] order = {0, 1, 2};
        for (int i = 2; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        double b = factor(random, config.brightness());
        double c = factor(random, config.contrast());
        double sat = factor(random, config.saturation());
        float[] v = patch.image();
        int plane = config.size() * config.size();
        for (int op : order) {
            switch (op) {
                case 0 -> blend(v, (float) b, 0f, plane);
                case 1 -> {
                    double mean = 0;
                    for (int i = 0; i < plane; i++) {
                        mean += grey(v, i, plane);
                    }
                    blendConstant(v, (float) c, (float) (mean / plane));
                }
                default -> saturate(v, (float) sat, plane);
            }
        }
        step = Step.NORMALIZE;
    }

    /** Uniform in [max(0, 1 - s), 1 + s]; 1 (no change) for strength 0. */
    private static double factor(SampleRandom random, double strength) {
        return strength == 0 ? 1 : random.nextDouble(Math.max(0, 1 - strength), 1 + strength);
    }

    /** torchvision's rgb_to_grayscale weights. */
    private static float grey(float[] v, int i, int plane) {
        return 0.2989f * v[i] + 0.587f * v[plane + i] + 0.114f * v[2 * plane + i];
    }

    private static float clamp(float x) {
        return x < 0 ? 0 : (x > 1 ? 1 : x);
    }

    /** Brightness: {@code f * v} (blended with black), clamped. */
    private static void blend(float[] v, float f, float other, int plane) {
        for (int i = 0; i < 3 * plane; i++) {
            v[i] = clamp(f * v[i] + (1 - f) * other);
        }
    }

    /** Contrast: blended with the image's mean grey, clamped. */
    private static void blendConstant(float[] v, float f, float mean) {
        for (int i = 0; i < v.length; i++) {
            v[i] = clamp(f * v[i] + (1 - f) * mean);
        }
    }

    /** Saturation: blended with each pixel's grey, clamped. */
    private static void saturate(float[] v, float f, int plane) {
        for (int i = 0; i < plane; i++) {
            float g = (1 - f) * grey(v, i, plane);
            v[i] = clamp(f * v[i] + g);
            v[plane + i] = clamp(f * v[plane + i] + g);
            v[2 * plane + i] = clamp(f * v[2 * plane + i] + g);
        }
    }

    private void normalize() {
        normalize(patch.image(), config);
        patch.setClassIndex(label);
        step = Step.DONE;
    }

    static void normalize(float[] v, ImageConfig config) {
        int plane = v.length / 3;
        for (int c = 0; c < 3; c++) {
            float mean = (float) config.mean(c);
            float inv = (float) (1 / config.std(c));
            for (int i = c * plane, n = i + plane; i < n; i++) {
                v[i] = (v[i] - mean) * inv;
            }
        }
    }

    @Override
    public long heldBytes() {
        long pixels = rgb == null || sharedPixels ? 0 : 4L * rgb.length;
        return 256 + pixels + (patch == null ? 0 : patch.bytes());
    }

    // ---- serialization ----

    private static final int FORMAT = 1;

    @Override
    public void writeTo(DataOutput out) throws IOException {
        writeHead(out, FORMAT);
        out.writeInt(label);
        out.writeInt(width);
        out.writeInt(height);
        out.writeInt(top);
        out.writeInt(left);
        out.writeInt(cropHeight);
        out.writeInt(cropWidth);
        out.writeInt(rowCursor);
        out.writeBoolean(rgb != null);
        if (rgb != null) {
            byte[] bytes = new byte[3 * rgb.length];
            for (int i = 0, o = 0; i < rgb.length; i++) {
                int p = rgb[i];
                bytes[o++] = (byte) (p >>> 16);
                bytes[o++] = (byte) (p >>> 8);
                bytes[o++] = (byte) p;
            }
            out.write(bytes);
        }
        writePatch(out);
    }

    static ImagePreparation readFrom(DataInput in, ImageConfig config, FileMemo<Decoded> memo)
            throws IOException {
        ImagePreparation p =
                new ImagePreparation(readKey(in, FORMAT, "image preparation"), config, memo);
        p.readStep(in, "image preparation");
        p.label = in.readInt();
        p.width = in.readInt();
        p.height = in.readInt();
        p.top = in.readInt();
        p.left = in.readInt();
        p.cropHeight = in.readInt();
        p.cropWidth = in.readInt();
        p.rowCursor = in.readInt();
        if (in.readBoolean()) {
            long pixels = (long) p.width * p.height;
            if (p.width <= 0 || p.height <= 0 || pixels > ImageFolder.MAX_PIXELS) {
                throw new IOException(
                        "corrupt image preparation state: " + p.width + "x" + p.height);
            }
            byte[] bytes = new byte[(int) (3 * pixels)];
            in.readFully(bytes);
            int[] rgb = new int[(int) pixels];
            for (int i = 0, o = 0; i < rgb.length; i++, o += 3) {
                rgb[i] =
                        (bytes[o] & 0xFF) << 16
                                | (bytes[o + 1] & 0xFF) << 8
                                | (bytes[o + 2] & 0xFF);
            }
            p.rgb = rgb;
        }
        p.readPatch(in);
        return p;
    }
}
