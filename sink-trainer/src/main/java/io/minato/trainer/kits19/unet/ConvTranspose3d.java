package io.minato.trainer.kits19.unet;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.nn.convolutional.Conv3d;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A 3-d transposed convolution with kernel 2 and stride 2 (the 3D-UNet's up-sampling), as
 * torch.nn.ConvTranspose3d(cin, cout, 2, 2): weight (Cin, Cout, 2, 2, 2) plus a bias per channel.
 */
public final class ConvTranspose3d extends AbstractBlock {

    private static final byte VERSION = 1;

    private final int filters;
    private final boolean includeBias;
    private final Parameter weight;
    private final Parameter bias;

    private ConvTranspose3d(Builder builder) {
        super(VERSION);
        this.filters = builder.filters;
        this.includeBias = builder.includeBias;
        weight =
                addParameter(
                        Parameter.builder()
                                .setName("weight")
                                .setType(Parameter.Type.WEIGHT)
                                .build());
        bias =
                includeBias
                        ? addParameter(
                                Parameter.builder()
                                        .setName("bias")
                                        .setType(Parameter.Type.BIAS)
                                        .optShape(new Shape(filters))
                                        .build())
                        : null;
    }

    /** Returns a builder; {@link Builder#setFilters} is required. */
    public static Builder builder() {
        return new Builder();
    }

    /** The number of output channels. */
    public int filters() {
        return filters;
    }

    @Override
    protected void prepare(Shape[] inputShapes) {
        weight.setShape(new Shape(channelsOf(inputShapes[0]), filters, 2, 2, 2));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape s = inputShapes[0];
        channelsOf(s);
        return new Shape[] {new Shape(s.get(0), filters, 2 * s.get(2), 2 * s.get(3), 2 * s.get(4))};
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        Shape s = x.getShape();
        long n = s.get(0);
        long cin = channelsOf(s);
        long d = s.get(2);
        long h = s.get(3);
        long w = s.get(4);
        Device device = x.getDevice();
        NDArray wt = parameterStore.getValue(weight, device, training);
        // With kernel == stride the output blocks do not overlap: each input voxel alone makes its
        // own 2x2x2 output block. So the layer is a 1x1x1 convolution to Cout*8 channels, one per
        // (output channel, offset in the block), followed by one copy that moves the offsets into
        // place. libtorch has no transposed convolution that DJL 0.35.1 reaches; its 1x1x1 Conv3d
        // reads the input where it is, where a matmul needs it transposed to channels-last first.
        // Views of the parameters belong to the model's manager: closed here, not with the step.
        NDArray rows = wt.reshape(cin, filters * 8L);
        NDArray columns = rows.transpose();
        NDArray kernel = columns.reshape(filters * 8L, cin, 1, 1, 1);
        closeAll(rows, columns);
        NDArray blockBias = null;
        if (includeBias) {
            NDArray perChannel =
                    parameterStore.getValue(bias, device, training).reshape(filters, 1);
            NDArray perBlock = perChannel.repeat(1, 8);
            blockBias = perBlock.reshape(filters * 8L);
            closeAll(perChannel, perBlock);
        }
        NDArray blocks =
                (blockBias == null ? Conv3d.conv3d(x, kernel) : Conv3d.conv3d(x, kernel, blockBias))
                        .singletonOrThrow();
        // (n, cout, a, b, c, d, h, w) -> (n, cout, d, a, h, b, w, c): output index 2d+a etc.
        NDArray split = blocks.reshape(n, filters, 2, 2, 2, d, h, w);
        NDArray interleaved = split.transpose(0, 1, 5, 2, 6, 3, 7, 4);
        NDArray out = interleaved.reshape(n, filters, 2 * d, 2 * h, 2 * w);
        // Intermediates close as soon as they are read: autograd keeps what backward needs.
        closeAll(kernel, blocks, split, interleaved);
        if (blockBias != null) {
            blockBias.close();
        }
        return new NDList(out);
    }

    private static void closeAll(NDArray... arrays) {
        for (NDArray array : arrays) {
            array.close();
        }
    }

    private static long channelsOf(Shape shape) {
        if (shape.dimension() != 5) {
            throw new IllegalArgumentException(
                    "ConvTranspose3d expects (N, C, D, H, W), got " + shape);
        }
        return shape.get(1);
    }

    /** Builder of {@link ConvTranspose3d}. */
    public static final class Builder {
        private int filters;
        private boolean includeBias = true;

        private Builder() {}

        /** The number of output channels (required). */
        public Builder setFilters(int filters) {
            this.filters = Unet3d.positive("filters", filters);
            return this;
        }

        /** Whether to add a bias per output channel; default true, as PyTorch. */
        public Builder optBias(boolean includeBias) {
            this.includeBias = includeBias;
            return this;
        }

        public ConvTranspose3d build() {
            if (filters == 0) {
                throw new IllegalStateException("ConvTranspose3d needs setFilters(n)");
            }
            return new ConvTranspose3d(this);
        }
    }
}
