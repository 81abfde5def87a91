package io.minato.trainer.kits19.unet;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv3d;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.XavierInitializer;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The 3D-UNet of the MLPerf image-segmentation benchmark (mlcommons/training,
 * image_segmentation/pytorch/model/unet3d.py) with instance norm and ReLU, and a width factor.
 *
 * <p>Input (N, inChannels, D, H, W) with D, H and W divisible by {@link #PATCH_DIVISOR}; output
 * logits (N, classes, D, H, W).
 */
public final class Unet3d extends AbstractBlock {

    /** Filters per level at full width; the reference caps the deepest levels at 320. */
    public static final List<Integer> FULL_WIDTH_FILTERS = List.of(32, 64, 128, 256, 320);

    /** Four down-sampling blocks and the bottleneck each halve the volume: 2^5. */
    public static final int PATCH_DIVISOR = 32;

    private static final byte VERSION = 1;

    private final int inChannels;
    private final int classes;
    private final double width;
    private final int[] filters;
    private final Block input;
    private final List<Block> down = new ArrayList<>();
    private final Block bottleneck;
    private final List<Block> up = new ArrayList<>();
    private final Block output;

    private Unet3d(Builder builder) {
        super(VERSION);
        inChannels = builder.inChannels;
        classes = builder.classes;
        width = builder.width;
        filters = scaledFilters(width);
        input =
                addChildBlock(
                        "input",
                        new SequentialBlock()
                                .add(convNormRelu(filters[0], 1))
                                .add(convNormRelu(filters[0], 1)));
        for (int i = 1; i < filters.length; i++) {
            down.add(addChildBlock("down" + i, downsample(filters[i])));
        }
        int deepest = filters[filters.length - 1];
        bottleneck = addChildBlock("bottleneck", downsample(deepest));
        up.add(addChildBlock("up0", new UpsampleBlock(deepest)));
        for (int i = filters.length - 2; i >= 0; i--) {
            up.add(addChildBlock("up" + (filters.length - 1 - i), new UpsampleBlock(filters[i])));
        }
        output =
                addChildBlock(
                        "output",
                        Conv3d.builder()
                                .setKernelShape(new Shape(1, 1, 1))
                                .setFilters(classes)
                                .build());
        // PyTorch's default for convolutions, U(+-1/sqrt(fan_in)), which the reference keeps
        // (weights_init_scale 1); biases start at zero here.
        setInitializer(
                new XavierInitializer(
                        XavierInitializer.RandomType.UNIFORM,
                        XavierInitializer.FactorType.IN,
                        1f / 3),
                Parameter.Type.WEIGHT);
    }

    /** Returns a builder: one input channel, 3 classes, full width unless told otherwise. */
    public static Builder builder() {
        return new Builder();
    }

    /** The filters per level at this width, shallowest first. */
    public int[] filters() {
        return filters.clone();
    }

    /** The width factor the filters were scaled by. */
    public double width() {
        return width;
    }

    /** The number of output classes (logit channels). */
    public int classes() {
        return classes;
    }

    /** The filters per level for a width factor: each full-width count scaled, at least 1. */
    public static int[] scaledFilters(double width) {
        return FULL_WIDTH_FILTERS.stream()
                .mapToInt(f -> Math.max(1, (int) Math.round(f * width)))
                .toArray();
    }

    /**
     * Checks that an input shape fits the model: (N, inChannels, D, H, W) with every spatial size
     * divisible by {@link #PATCH_DIVISOR}.
     *
     * @throws IllegalArgumentException saying what is wrong and what would fit
     */
    public void checkInputShape(Shape shape) {
        if (shape.dimension() != 5 || shape.get(1) != inChannels) {
            throw new IllegalArgumentException(
                    "Unet3d expects (N, "
                            + inChannels
                            + ", D, H, W), got "
                            + shape
                            + "; give the image as one channel before the spatial axes");
        }
        for (int axis = 2; axis < 5; axis++) {
            long size = shape.get(axis);
            if (size <= 0 || size % PATCH_DIVISOR != 0) {
                throw new IllegalArgumentException(
                        "Unet3d patch "
                                + Arrays.toString(Arrays.copyOfRange(shape.getShape(), 2, 5))
                                + " is not divisible by "
                                + PATCH_DIVISOR
                                + " on every axis (the model halves the volume 5 times);"
                                + " use a patch such as 32, 64 or 128");
            }
        }
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        checkInputShape(inputs.singletonOrThrow().getShape());
        NDList x = forwardFreeing(input, parameterStore, inputs, training);
        List<NDList> skips = new ArrayList<>();
        skips.add(x);
        for (Block block : down) {
            x = forwardFreeing(block, parameterStore, x, training);
            skips.add(x);
        }
        x = forwardFreeing(bottleneck, parameterStore, x, training);
        Collections.reverse(skips);
        for (int i = 0; i < up.size(); i++) {
            NDList skip = skips.get(i);
            NDList joined =
                    up.get(i).forward(parameterStore, new NDList(x.head(), skip.head()), training);
            x.close();
            skip.close();
            x = joined;
        }
        NDList logits = output.forward(parameterStore, x, training);
        x.close();
        return logits;
    }

    /**
     * Runs {@code block} on {@code x} as its own forward pass would, and closes each intermediate
     * output of a {@link SequentialBlock} as soon as the next layer has read it, not at the end of
     * the step: the arrays that the backward pass needs, autograd holds by itself. {@code x} stays
     * open; it is the caller's.
     */
    static NDList forwardFreeing(
            Block block, ParameterStore parameterStore, NDList x, boolean training) {
        if (!(block instanceof SequentialBlock)) {
            return block.forward(parameterStore, x, training);
        }
        NDList current = x;
        for (Block child : block.getChildren().values()) {
            NDList next = forwardFreeing(child, parameterStore, current, training);
            if (current != x) {
                closeUnlessIn(current, next);
            }
            current = next;
        }
        return current;
    }

    /** Closes the arrays of {@code done} that {@code kept} does not hold too. */
    static void closeUnlessIn(NDList done, NDList kept) {
        for (NDArray array : done) {
            if (kept.stream().noneMatch(k -> k == array)) {
                array.close();
            }
        }
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        checkInputShape(inputShapes[0]);
        Shape s = initialize(input, manager, dataType, inputShapes[0]);
        List<Shape> skips = new ArrayList<>();
        skips.add(s);
        for (Block block : down) {
            s = initialize(block, manager, dataType, s);
            skips.add(s);
        }
        s = initialize(bottleneck, manager, dataType, s);
        Collections.reverse(skips);
        for (int i = 0; i < up.size(); i++) {
            up.get(i).initialize(manager, dataType, s, skips.get(i));
            s = up.get(i).getOutputShapes(new Shape[] {s, skips.get(i)})[0];
        }
        output.initialize(manager, dataType, s);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape s = inputShapes[0];
        checkInputShape(s);
        return new Shape[] {new Shape(s.get(0), classes, s.get(2), s.get(3), s.get(4))};
    }

    private static Shape initialize(Block block, NDManager manager, DataType type, Shape shape) {
        block.initialize(manager, type, shape);
        return block.getOutputShapes(new Shape[] {shape})[0];
    }

    /** Conv 3x3x3 (padding 1, no bias: the norm's beta takes its place), instance norm, ReLU. */
    static Block convNormRelu(int filters, int stride) {
        return new SequentialBlock()
                .add(
                        Conv3d.builder()
                                .setKernelShape(new Shape(3, 3, 3))
                                .optStride(new Shape(stride, stride, stride))
                                .optPadding(new Shape(1, 1, 1))
                                .setFilters(filters)
                                .optBias(false)
                                .build())
                .add(InstanceNorm3d.builder().build())
                .add(Activation.reluBlock());
    }

    private static Block downsample(int filters) {
        return new SequentialBlock().add(convNormRelu(filters, 2)).add(convNormRelu(filters, 1));
    }

    /** {@code value}, checked to be above 0: the builders' counts. */
    static int positive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, got " + value);
        }
        return value;
    }

    /** Builder of {@link Unet3d}. */
    public static final class Builder {
        private int inChannels = 1;
        private int classes = 3;
        private double width = 1.0;

        private Builder() {}

        /** Image channels; default 1 (CT). */
        public Builder optInChannels(int inChannels) {
            this.inChannels = positive("inChannels", inChannels);
            return this;
        }

        /** Output classes; default 3 (background, kidney, tumour). */
        public Builder optClasses(int classes) {
            this.classes = positive("classes", classes);
            return this;
        }

        /**
         * Scales the filters 32-64-128-256-320; default 1.0 (the reference), e.g. 0.125 gives
         * 4-8-16-32-40 for CPU tests.
         */
        public Builder optWidth(double width) {
            if (!(width > 0) || Double.isInfinite(width)) {
                throw new IllegalArgumentException("width must be > 0, got " + width);
            }
            this.width = width;
            return this;
        }

        public Unet3d build() {
            return new Unet3d(this);
        }
    }
}
