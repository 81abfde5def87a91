package io.minato.trainer.kits19.unet;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/** One decoder level of the 3D-UNet: up-sample, concatenate the skip, two conv-norm-ReLU. */
final class UpsampleBlock extends AbstractBlock {

    private static final byte VERSION = 1;

    private final int filters;
    private final ConvTranspose3d upsample;
    private final Block conv1;
    private final Block conv2;

    UpsampleBlock(int filters) {
        super(VERSION);
        this.filters = filters;
        upsample = addChildBlock("upsample", ConvTranspose3d.builder().setFilters(filters).build());
        conv1 = addChildBlock("conv1", Unet3d.convNormRelu(filters, 1));
        conv2 = addChildBlock("conv2", Unet3d.convNormRelu(filters, 1));
    }

    /** Inputs: the coarser feature map and the skip connection of the matching encoder level. */
    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = upsample.forward(parameterStore, new NDList(inputs.get(0)), training).head();
        // Up-sampled first, skip second: the reference's torch.cat((x, skip), dim=1).
        NDList joined = new NDList(x.concat(inputs.get(1), 1));
        x.close();
        NDList first = Unet3d.forwardFreeing(conv1, parameterStore, joined, training);
        joined.close();
        NDList second = Unet3d.forwardFreeing(conv2, parameterStore, first, training);
        Unet3d.closeUnlessIn(first, second);
        return second;
    }

    @Override
    protected void initializeChildBlocks(
            NDManager manager, DataType dataType, Shape... inputShapes) {
        Shape up = upsample.getOutputShapes(new Shape[] {inputShapes[0]})[0];
        upsample.initialize(manager, dataType, inputShapes[0]);
        Shape joined =
                new Shape(
                        up.get(0),
                        up.get(1) + inputShapes[1].get(1),
                        up.get(2),
                        up.get(3),
                        up.get(4));
        conv1.initialize(manager, dataType, joined);
        conv2.initialize(manager, dataType, conv1.getOutputShapes(new Shape[] {joined}));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape up = upsample.getOutputShapes(new Shape[] {inputShapes[0]})[0];
        return new Shape[] {new Shape(up.get(0), filters, up.get(2), up.get(3), up.get(4))};
    }
}
