package io.minato.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.pooling.Pool;
import ai.djl.training.loss.Loss;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.transform.Patch;
import io.minato.transform.Shape3;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A small CNN for 2D image classification (the images workload) on RGB images: three stages of two
 * 3x3 convolutions with ReLU and a 2x2 max pool, global average pooling and a linear layer to the
 * classes; softmax cross-entropy against class indices. No batch norm: the accelerator's own update
 * applies to gradients, and batch norm's running statistics are not trained by gradients. Its
 * parameters do not depend on the image size, so any crop of at least 8 pixels trains it.
 *
 * @param classes how many classes the images fall into
 * @param width the channel multiplier: stage k has 16 x 2^k x width channels
 */
public record ImageClassifier(int classes, double width) implements Network {
    private static final long serialVersionUID = 1L;

    public static final String MODEL_NAME = "cnn2d";

    /** Three 2x2 pools: an input must be at least this many pixels on a side. */
    public static final int MIN_SIZE = 8;

    /** Input channels: the images workload turns every image into RGB. */
    public static final int CHANNELS = 3;

    public ImageClassifier {
        if (classes < 2) {
            throw new IllegalArgumentException("a classifier needs >= 2 classes: " + classes);
        }
        if (!(width > 0)) {
            throw new IllegalArgumentException("width must be > 0: " + width);
        }
    }

    @Override
    public String modelName() {
        return MODEL_NAME;
    }

    @Override
    public Block newBlock() {
        SequentialBlock net = new SequentialBlock();
        for (int stage = 0; stage < 3; stage++) {
            int channels = Math.max(1, (int) Math.round(16 * (1 << stage) * width));
            for (int conv = 0; conv < 2; conv++) {
                net.add(
                        Conv2d.builder()
                                .setKernelShape(new Shape(3, 3))
                                .optPadding(new Shape(1, 1))
                                .setFilters(channels)
                                .build());
                net.add(Activation.reluBlock());
            }
            net.add(Pool.maxPool2dBlock(new Shape(2, 2), new Shape(2, 2)));
        }
        net.add(Pool.globalAvgPool2dBlock());
        net.add(Blocks.batchFlattenBlock());
        net.add(Linear.builder().setUnits(classes).build());
        return net;
    }

    @Override
    public Loss newLoss() {
        return Loss.softmaxCrossEntropyLoss();
    }

    @Override
    public Shape initShape() {
        return new Shape(1, CHANNELS, 32, 32);
    }

    /**
     * (N, C, H, W): a 2D sample's Shape3 is (channels, height, width).
     *
     * @throws IllegalArgumentException not RGB, or smaller than {@link #MIN_SIZE}
     */
    @Override
    public Shape inputShape(int batch, Shape3 patch) {
        if (patch.d() != CHANNELS || patch.h() < MIN_SIZE || patch.w() < MIN_SIZE) {
            throw new IllegalArgumentException(
                    "images of shape "
                            + patch
                            + " (channels x height x width); the classifier takes "
                            + CHANNELS
                            + " channels and at least "
                            + MIN_SIZE
                            + "x"
                            + MIN_SIZE
                            + " pixels");
        }
        return new Shape(batch, patch.d(), patch.h(), patch.w());
    }

    /** The class indices as (N) int64 on the device, from their little-endian int32 bytes. */
    @Override
    public NDArray labels(Batch batch, ByteBuffer targets, NDManager manager) {
        int n = batch.samples().size();
        for (PreparedSample s : batch.samples()) {
            Patch p = s.patch();
            if (p.label().length != Patch.CLASS_BYTES || p.denseLabel()) {
                throw new IllegalArgumentException(
                        "batch "
                                + batch.sequence()
                                + " holds a dense label; the image classifier trains on class"
                                + " indices (--workload images)");
            }
            int cls = p.classIndex();
            if (cls < 0 || cls >= classes) {
                throw new IllegalArgumentException(
                        "batch "
                                + batch.sequence()
                                + " holds class "
                                + cls
                                + "; the classifier has "
                                + classes
                                + " classes");
            }
        }
        ByteBuffer le = targets.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            // The engine reads the buffer in native order: turn each index round first.
            ByteBuffer copy =
                    ByteBuffer.allocateDirect(n * Integer.BYTES).order(ByteOrder.nativeOrder());
            for (int i = 0; i < n; i++) {
                copy.putInt(le.getInt(i * Integer.BYTES));
            }
            le = copy.flip();
        }
        return manager.create(le, new Shape(n), DataType.INT32).toType(DataType.INT64, false);
    }
}
