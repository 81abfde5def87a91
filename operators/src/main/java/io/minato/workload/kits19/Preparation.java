package io.minato.workload.kits19;

import io.minato.spi.Patch;
import io.minato.spi.PatchPool;
import io.minato.spi.SampleKey;
import io.minato.spi.SampleRandom;
import io.minato.spi.Shape3;
import io.minato.spi.StepCursor;
import io.minato.stats.FetchClock;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The MLPerf 3D-UNet training transforms of one sample as a sequence of resumable steps:
 * RandBalancedCrop (with Cast fused into the crop copy), RandFlip, RandomBrightnessAugmentation and
 * GaussianNoise.
 *
 * <p>{@link #advance} runs one short step. Between steps the whole state is this object, which
 * {@link #writeTo} serializes compactly: before the crop it holds only the sample key and, for a
 * foreground crop, the connected-component scan state or its result; after it, the patch. A
 * preparation may stop after any step and resume on another thread or operator with the
 * bit-identical final result, because every random choice comes from a {@link SampleRandom} stream
 * keyed by the sample.
 *
 * <p>The scan's result depends on the label file alone, so it is asked of the volume's {@link
 * CaseMemo} first and handed to it once complete: a case is scanned once, not once per foreground
 * sample. Whether the components were remembered or scanned, the sample is the same bytes.
 */
public final class Preparation extends StepCursor<Volume, Preparation.Step> {

    /** The steps, in order; several steps may run more than once (one part per call). */
    public enum Step {
        /** Draws the crop branch: foreground-centred (oversampling) or uniform. */
        START(Transform.CROP),
        /**
         * Labels connected components, one slab of slices per call; skipped when the case's memo
         * knows them.
         */
        SCAN(Transform.CROP),
        /** Picks the class, component and window of a foreground crop. */
        PICK(Transform.CROP),
        /** Copies the window out of the volume into float32/uint8 arrays, a slab per call. */
        CROP(Transform.CROP),
        FLIP(Transform.FLIP),
        BRIGHTNESS(Transform.BRIGHTNESS),
        /** Adds Gaussian noise, a slab of slices per call. */
        NOISE(Transform.NOISE),
        /**
         * The bench's tail knob ({@link TransformConfig#withTail}): extra work that changes no
         * byte, a slab of slices per call; only for the heavy fraction of samples.
         */
        TAIL(Transform.TAIL),
        DONE(null);

        private final Transform transform;

        Step(Transform transform) {
            this.transform = transform;
        }

        /** The MLPerf transform this step is part of; null for DONE. */
        public Transform transform() {
            return transform;
        }
    }

    /** The MLPerf transforms, for accounting time per transform. */
    public enum Transform {
        CROP("RandBalancedCrop+Cast"),
        FLIP("RandFlip"),
        BRIGHTNESS("RandomBrightness"),
        NOISE("GaussianNoise"),
        TAIL("tail knob");

        private final String label;

        Transform(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /** The settings {@link #advance(Volume)} runs with; null when each call passes its own. */
    private TransformConfig bound;

    /** Crop window origin in padded coordinates, once chosen. */
    private int[] origin;

    private boolean foreground;
    private ComponentScan scan;

    /** The case's foreground components, between the end of the scan (or the memo) and PICK. */
    private List<Component> components;

    /** The next slice of the patch for the sliced steps CROP and NOISE. */
    private int sliceCursor;

    /** The noise standard deviation once drawn; NaN before the draw, 0 when no noise applies. */
    private double noiseStd = Double.NaN;

    /** Tail passes done, and where their values go (kept so that the work is not optimised out). */
    private int tailPass;

    private double tailSink;

    private Preparation(SampleKey key) {
        super(key, Step.START, Step.DONE);
    }

    public static Preparation start(SampleKey key) {
        return new Preparation(key);
    }

    /** A preparation whose steps run with {@code config} ({@link #advance(Volume)}). */
    public static Preparation start(SampleKey key, TransformConfig config) {
        return new Preparation(key).bind(config);
    }

    /** Runs later steps with {@code config}; for a state read back. */
    public Preparation bind(TransformConfig config) {
        this.bound = Objects.requireNonNull(config, "config");
        return this;
    }

    /** Runs every remaining step: the whole chain on one thread. */
    public static Patch prepare(SampleKey key, Volume volume, TransformConfig config) {
        Preparation p = start(key);
        while (!p.isDone()) {
            p.advance(volume, config);
        }
        return p.result();
    }

    /** Whether the crop is foreground-centred; meaningful once START ran. */
    public boolean isForegroundCrop() {
        return foreground;
    }

    /** The MLPerf transform of the next step: its {@link Transform#label()}. */
    @Override
    public String stepName() {
        return isDone() ? "done" : step.transform().label();
    }

    @Override
    public String variant() {
        if (step == Step.START) {
            return null;
        }
        return foreground ? "foreground-centred crop" : "uniform crop";
    }

    /** Runs the current step (or one part of it) with the settings bound at the start. */
    @Override
    public void advance(Volume volume) {
        if (bound == null) {
            throw new IllegalStateException("preparation of " + key + " has no settings bound");
        }
        advance(volume, bound);
    }

    /**
     * Runs the current step (or one part of it) and moves the cursor on.
     *
     * @return the transform the work belonged to
     */
    public Transform advance(Volume volume, TransformConfig config) {
        Step running = step;
        switch (running) {
            case START -> start(volume, config);
            case SCAN -> scanSlab(volume, config);
            case PICK -> pick(volume, config);
            case CROP -> {
                // The crop copies the patch out of the mapped files: the sample's read (fetch).
                try (var read = FetchClock.read()) {
                    cropSlab(volume, config);
                }
            }
            case FLIP -> flip(config);
            case BRIGHTNESS -> brightness(config);
            case NOISE -> noiseSlab(config);
            case TAIL -> tailSlab(config);
            case DONE -> throw advancedWhenDone();
        }
        return running.transform();
    }

    private void start(Volume volume, TransformConfig config) {
        SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.CROP_BRANCH, 0);
        foreground = random.nextDouble() < config.oversampling();
        if (foreground) {
            components = volume.memo().foregroundComponents();
            if (components != null) {
                step = Step.PICK;
            } else {
                scan = new ComponentScan(volume.shape());
                step = Step.SCAN;
            }
        } else {
            origin = CropWindow.uniform(volume.shape(), config.patch(), random);
            step = Step.CROP;
        }
    }

    private void scanSlab(Volume volume, TransformConfig config) {
        Shape3 s = volume.shape();
        int slices = slicesPerStep(s, config);
        scan.scan(volume.label(), Math.min(s.d(), scan.nextSlice() + slices));
        if (scan.isComplete()) {
            components = scan.components();
            scan = null;
            volume.memo().rememberForegroundComponents(components);
            step = Step.PICK;
        }
    }

    /** The reference's rand_foreg_cropd after the labelling, plus a guarantee of foreground. */
    private void pick(Volume volume, TransformConfig config) {
        List<Component> components = this.components;
        this.components = null;
        origin = CropWindow.foreground(key, volume, config.patch(), components);
        step = Step.CROP;
    }

    /** Copies slices of the window; coordinates outside the volume repeat its edge voxels. */
    private void cropSlab(Volume volume, TransformConfig config) {
        Shape3 p = config.patch();
        Shape3 s = volume.shape();
        if (patch == null) {
            patch = PatchPool.jvm().take(p); // every voxel is written below
            sliceCursor = 0;
        }
        int[] offset = CropWindow.padOffset(s, p);
        int end = Math.min(p.d(), sliceCursor + slicesPerStep(p, config));
        FloatBuffer image = volume.image();
        ByteBuffer label = volume.label();
        float[] outImage = patch.image();
        byte[] outLabel = patch.label();
        int x0 = origin[2] - offset[2];
        boolean rowInside = x0 >= 0 && x0 + p.w() <= s.w();
        for (int pz = sliceCursor; pz < end; pz++) {
            int z = clamp(origin[0] + pz - offset[0], s.d());
            for (int py = 0; py < p.h(); py++) {
                int y = clamp(origin[1] + py - offset[1], s.h());
                int src = (z * s.h() + y) * s.w();
                int dst = (pz * p.h() + py) * p.w();
                if (rowInside) {
                    image.get(src + x0, outImage, dst, p.w());
                    label.get(src + x0, outLabel, dst, p.w());
                } else {
                    for (int px = 0; px < p.w(); px++) {
                        int x = clamp(x0 + px, s.w());
                        outImage[dst + px] = image.get(src + x);
                        outLabel[dst + px] = label.get(src + x);
                    }
                }
            }
        }
        sliceCursor = end;
        if (sliceCursor == p.d()) {
            sliceCursor = 0;
            step = Step.FLIP;
        }
    }

    /** RandFlip: each spatial axis flipped with probability 1/3, image and label alike. */
    private void flip(TransformConfig config) {
        SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.FLIP, 0);
        for (int axis = 0; axis < 3; axis++) {
            if (random.nextDouble() < config.flipProbability()) {
                Flips.flip(patch, axis);
            }
        }
        step = Step.BRIGHTNESS;
    }

    /** The reference multiplies by (1 + factor), factor uniform in [1 - f, 1 + f]; kept as is. */
    private void brightness(TransformConfig config) {
        SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.BRIGHTNESS, 0);
        if (random.nextDouble() < config.brightnessProbability()) {
            double f = config.brightnessFactor();
            double scale = 1 + random.nextDouble(1 - f, 1 + f);
            float[] image = patch.image();
            for (int i = 0; i < image.length; i++) {
                image[i] = (float) (image[i] * scale);
            }
        }
        step = Step.NOISE;
    }

    /** GaussianNoise: with probability p, add N(0, s) per voxel, s uniform in [0, std). */
    private void noiseSlab(TransformConfig config) {
        if (Double.isNaN(noiseStd)) {
            SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.NOISE_DECISION, 0);
            noiseStd =
                    random.nextDouble() < config.noiseProbability()
                            ? random.nextDouble(0, config.noiseStd())
                            : 0;
            sliceCursor = 0;
            if (noiseStd == 0) {
                afterNoise(config);
                return;
            }
        }
        Shape3 p = patch.shape();
        int plane = p.h() * p.w();
        int end = Math.min(p.d(), sliceCursor + slicesPerStep(p, config));
        float[] image = patch.image();
        for (int z = sliceCursor; z < end; z++) {
            // One stream per slice: the values do not depend on how the slices are grouped.
            SampleRandom random = SampleRandom.of(key, SampleRandom.Stream.NOISE_VALUES, z);
            for (int i = z * plane, n = i + plane; i < n; i++) {
                image[i] += (float) (noiseStd * random.nextGaussian());
            }
        }
        sliceCursor = end;
        if (sliceCursor == p.d()) {
            afterNoise(config);
        }
    }

    /** Done, unless the sample is one of the tail knob's heavy fraction. */
    private void afterNoise(TransformConfig config) {
        sliceCursor = 0;
        boolean heavy =
                config.hasTail()
                        && SampleRandom.of(key, SampleRandom.Stream.TAIL_DECISION, 0).nextDouble()
                                < config.tailFraction();
        step = heavy ? Step.TAIL : Step.DONE;
    }

    /**
     * One slab of one of the tail's factor - 1 passes: Gaussian draws over half the patch's slices
     * (about one median sample's CPU at patch 128), summed and discarded.
     */
    private void tailSlab(TransformConfig config) {
        Shape3 p = patch.shape();
        int plane = p.h() * p.w();
        int depth = (p.d() + 1) / 2;
        int end = Math.min(depth, sliceCursor + slicesPerStep(p, config));
        double sum = tailSink;
        for (int z = sliceCursor; z < end; z++) {
            SampleRandom random =
                    SampleRandom.of(key, SampleRandom.Stream.TAIL_VALUES, tailPass * p.d() + z);
            for (int i = 0; i < plane; i++) {
                sum += random.nextGaussianPolar();
            }
        }
        tailSink = sum;
        sliceCursor = end;
        if (sliceCursor == depth) {
            sliceCursor = 0;
            tailPass++;
            if (tailPass >= config.tailFactor() - 1) {
                step = Step.DONE;
            }
        }
    }

    /** What the tail knob's passes computed (nothing uses it; it keeps the work from vanishing). */
    public double tailSink() {
        return tailSink;
    }

    private static int slicesPerStep(Shape3 s, TransformConfig config) {
        long plane = (long) s.h() * s.w();
        return (int) Math.max(1, Math.min(s.d(), config.voxelsPerStep() / plane));
    }

    private static int clamp(int v, int n) {
        return v < 0 ? 0 : (v >= n ? n - 1 : v);
    }

    /**
     * About how many bytes this state holds beyond its fixed fields: the patch cut so far (float32
     * image, uint8 label) and a component scan's slice of labels. What a handoff counts it as.
     */
    @Override
    public long heldBytes() {
        long bytes = 256;
        if (patch != null) {
            bytes += patch.bytes();
        }
        if (scan != null) {
            bytes += 4L * scan.shape().h() * scan.shape().w();
        }
        return bytes;
    }

    // ---- serialization: what crosses from a fast worker to the slow path ----

    private static final int FORMAT = 4;

    @Override
    public void writeTo(DataOutput out) throws IOException {
        writeHead(out, FORMAT);
        out.writeBoolean(foreground);
        out.writeBoolean(origin != null);
        if (origin != null) {
            out.writeInt(origin[0]);
            out.writeInt(origin[1]);
            out.writeInt(origin[2]);
        }
        out.writeBoolean(scan != null);
        if (scan != null) {
            scan.writeTo(out);
        }
        out.writeInt(components == null ? -1 : components.size());
        if (components != null) {
            for (Component c : components) {
                c.writeTo(out);
            }
        }
        out.writeInt(sliceCursor);
        out.writeDouble(noiseStd);
        out.writeInt(tailPass);
        out.writeDouble(tailSink);
        writePatch(out);
    }

    public static Preparation readFrom(DataInput in) throws IOException {
        Preparation p = new Preparation(readKey(in, FORMAT, "preparation"));
        p.readStep(in, "preparation");
        p.foreground = in.readBoolean();
        if (in.readBoolean()) {
            p.origin = new int[] {in.readInt(), in.readInt(), in.readInt()};
        }
        if (in.readBoolean()) {
            p.scan = ComponentScan.readFrom(in);
        }
        int count = in.readInt();
        if (count < -1) {
            throw new IOException("corrupt preparation state: " + count + " components");
        }
        if (count >= 0) {
            List<Component> components = new ArrayList<>(Math.min(count, 1024));
            for (int k = 0; k < count; k++) {
                components.add(Component.readFrom(in));
            }
            p.components = List.copyOf(components);
        }
        p.sliceCursor = in.readInt();
        p.noiseStd = in.readDouble();
        p.tailPass = in.readInt();
        p.tailSink = in.readDouble();
        p.readPatch(in);
        return p;
    }
}
