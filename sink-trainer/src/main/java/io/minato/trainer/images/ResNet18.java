package io.minato.trainer.images;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.ParallelBlock;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.nn.pooling.Pool;
import java.util.List;

/**
 * torchvision's ResNet-18 in DJL blocks: a 7x7 stride-2 convolution, batch norm, ReLU and a 3x3
 * stride-2 max pool, four stages of two basic blocks (two 3x3 convolutions with batch norm, plus
 * the input; a 1x1 stride-2 convolution with batch norm where a stage halves the size), global
 * average pooling and a linear layer. Convolutions have no bias, as there.
 *
 * <p>Not DJL's {@code ai.djl.basicmodelzoo.cv.classification.ResNetV1}: asked for 18 layers, that
 * one builds bottleneck units with a quarter of the channels, drops the stem's batch norm and pool
 * for images up to 32 pixels and refuses images up to 28, so its numbers would not be ResNet-18's.
 */
final class ResNet18 {
    /** torchvision's batch norm: momentum 0.1 there is 0.9 in DJL's convention. */
    private static final float BN_MOMENTUM = 0.9f;

    private ResNet18() {}

    /**
     * @param classes the linear layer's outputs
     * @param width the channel multiplier: stage k has 64 x 2^k x width channels (1: ResNet-18)
     */
    static Block build(int classes, double width) {
        SequentialBlock net = new SequentialBlock();
        int stem = channels(0, width);
        net.add(conv(stem, 7, 2))
                .add(batchNorm())
                .add(Activation.reluBlock())
                .add(Pool.maxPool2dBlock(new Shape(3, 3), new Shape(2, 2), new Shape(1, 1)));
        int in = stem;
        for (int stage = 0; stage < 4; stage++) {
            int out = channels(stage, width);
            for (int unit = 0; unit < 2; unit++) {
                int stride = stage > 0 && unit == 0 ? 2 : 1;
                net.add(basicBlock(out, stride, stride != 1 || in != out));
                in = out;
            }
        }
        return net.add(Pool.globalAvgPool2dBlock())
                .add(Blocks.batchFlattenBlock())
                .add(Linear.builder().setUnits(classes).build());
    }

    private static int channels(int stage, double width) {
        return Math.max(1, (int) Math.round(64 * (1 << stage) * width));
    }

    /** Two 3x3 convolutions plus the shortcut, then ReLU. */
    private static Block basicBlock(int channels, int stride, boolean project) {
        SequentialBlock residual =
                new SequentialBlock()
                        .add(conv(channels, 3, stride))
                        .add(batchNorm())
                        .add(Activation.reluBlock())
                        .add(conv(channels, 3, 1))
                        .add(batchNorm());
        Block shortcut =
                project
                        ? new SequentialBlock().add(conv(channels, 1, stride)).add(batchNorm())
                        : Blocks.identityBlock();
        return new ParallelBlock(
                branches ->
                        new NDList(
                                Activation.relu(
                                        branches.get(0)
                                                .singletonOrThrow()
                                                .add(branches.get(1).singletonOrThrow()))),
                List.of(residual, shortcut));
    }

    private static Block conv(int filters, int kernel, int stride) {
        return Conv2d.builder()
                .setKernelShape(new Shape(kernel, kernel))
                .optStride(new Shape(stride, stride))
                .optPadding(new Shape(kernel / 2, kernel / 2))
                .setFilters(filters)
                .optBias(false)
                .build();
    }

    private static Block batchNorm() {
        return BatchNorm.builder().optEpsilon(1e-5f).optMomentum(BN_MOMENTUM).build();
    }
}
