package io.minato.trainer.kits19;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.loss.Loss;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.Shape3;
import io.minato.trainer.Network;
import io.minato.trainer.kits19.unet.DiceCeLoss;
import io.minato.trainer.kits19.unet.Unet3d;
import java.nio.ByteBuffer;

/**
 * The MLPerf 3D-UNet on one-channel volumes, Dice + cross-entropy against dense labels (the kits19
 * workload).
 */
public record Unet3dNetwork(double width) implements Network {
    private static final long serialVersionUID = 1L;

    public static final String MODEL_NAME = "unet3d";

    public Unet3dNetwork {
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
        return Unet3d.builder().optWidth(width).build();
    }

    @Override
    public Loss newLoss() {
        return DiceCeLoss.builder().build();
    }

    /** Parameter shapes do not depend on the patch: any multiple of 32 initialises them. */
    @Override
    public Shape initShape() {
        return new Shape(1, 1, 32, 32, 32);
    }

    @Override
    public Shape inputShape(int batch, Shape3 patch) {
        return new Shape(batch, 1, patch.d(), patch.h(), patch.w());
    }

    /** The labels as (N, 1, D, H, W) bytes: the loss compares them as integers. */
    @Override
    public NDArray labels(Batch batch, ByteBuffer targets, NDManager manager) {
        for (PreparedSample s : batch.samples()) {
            if (!s.patch().denseLabel()) {
                throw new IllegalArgumentException(
                        "batch "
                                + batch.sequence()
                                + " holds a class-index target; the 3D-UNet trains on dense"
                                + " labels (--workload kits19)");
            }
        }
        Shape3 s = batch.samples().get(0).patch().shape();
        return manager.create(targets, inputShape(batch.samples().size(), s), DataType.UINT8);
    }
}
