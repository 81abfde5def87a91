package io.minato.trainer.images;

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
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.Network;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A 2D image classifier (the images workload) on RGB images, softmax cross-entropy against class
 * indices. Two architectures: {@link Architecture#CNN}, a small CNN (three stages of two 3x3
 * convolutions with ReLU and a 2x2 max pool, global average pooling and a linear layer to the
 * classes; no batch norm), and {@link Architecture#RESNET18}, torchvision's ResNet-18 (batch norm,
 * whose running statistics the accelerator carries but does not train). Neither's parameters depend
 * on the image size, so any crop of at least {@link #MIN_SIZE} pixels trains them.
 *
 * @param classes how many classes the images fall into
 * @param width the channel multiplier: the CNN's stage k has 16 x 2^k x width channels, ResNet-18's
 *     64 x 2^k x width
 * @param architecture which network; null: the small CNN
 */
public record ImageClassifier(int classes, double width, Architecture architecture)
        implements Network {
    private static final long serialVersionUID = 1L;

    /** The small CNN's saved name. */
    public static final String MODEL_NAME = "cnn2d";

    /** Three 2x2 pools: an input must be at least this many pixels on a side. */
    public static final int MIN_SIZE = 8;

    /** Input channels: the images workload turns every image into RGB. */
    public static final int CHANNELS = 3;

    /** The classifier's network; each saves under its own name, so neither loads the other. */
    public enum Architecture {
        /** The small CNN, cheap enough for a CPU. */
        CNN(MODEL_NAME),
        /** torchvision's ResNet-18 layout, built from DJL blocks. */
        RESNET18("resnet18");

        private final String modelName;

        Architecture(String modelName) {
            this.modelName = modelName;
        }

        /** The name its saved models, checkpoints and {@code train --network} go by. */
        public String modelName() {
            return modelName;
        }

        /** The architecture whose {@link #modelName()} is {@code name}. */
        public static Architecture named(String name) {
            for (Architecture a : values()) {
                if (a.modelName.equals(name)) {
                    return a;
                }
            }
            throw new IllegalArgumentException("no image classifier named " + name);
        }
    }

    public ImageClassifier {
        if (classes < 2) {
            throw new IllegalArgumentException("a classifier needs >= 2 classes: " + classes);
        }
        if (!(width > 0)) {
            throw new IllegalArgumentException("width must be > 0: " + width);
        }
        if (architecture == null) {
            // The small CNN was the only one: what a job graph of before the choice reads back.
            architecture = Architecture.CNN;
        }
    }

    /** The small CNN. */
    public ImageClassifier(int classes, double width) {
        this(classes, width, Architecture.CNN);
    }

    @Override
    public String modelName() {
        return architecture.modelName;
    }

    @Override
    public Block newBlock() {
        return switch (architecture) {
            case CNN -> smallCnn();
            case RESNET18 -> ResNet18.build(classes, width);
        };
    }

    private Block smallCnn() {
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
