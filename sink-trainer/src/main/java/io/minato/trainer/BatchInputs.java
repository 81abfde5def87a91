package io.minato.trainer;

import ai.djl.ndarray.types.Shape;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A batch's inputs in the network's layout ((N, 1, D, H, W) for the 3D-UNet, (N, C, H, W) for a 2D
 * network) and its targets, each patch copied once into reused direct buffers, which libtorch reads
 * in place on the CPU and copies once to a GPU.
 */
final class BatchInputs {
    private ByteBuffer imageBuffer;
    private ByteBuffer labelBuffer;
    ByteBuffer images;
    ByteBuffer labels;
    Shape imageShape;
    Batch staged; // the batch these buffers hold, until its step takes them

    void stage(Batch batch, Network network) {
        var s = batch.samples().get(0).patch().shape();
        try {
            imageShape = network.inputShape(batch.samples().size(), s);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "batch " + batch.sequence() + " holds " + e.getMessage(), e);
        }
        int n = Math.toIntExact(s.voxels());
        int bytes = Math.multiplyExact(Math.multiplyExact(n, batch.samples().size()), Float.BYTES);
        if (imageBuffer == null || imageBuffer.capacity() < bytes) {
            imageBuffer = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
        }
        images = imageBuffer.clear().limit(bytes);
        var floats = images.asFloatBuffer();
        int labelBytes = 0;
        for (PreparedSample sample : batch.samples()) {
            if (!sample.patch().shape().equals(s)) {
                throw new IllegalArgumentException(
                        "batch " + batch.sequence() + " mixes patch shapes");
            }
            floats.put(sample.patch().image());
            labelBytes = Math.addExact(labelBytes, sample.patch().label().length);
        }
        if (labelBuffer == null || labelBuffer.capacity() < labelBytes) {
            labelBuffer = ByteBuffer.allocateDirect(labelBytes).order(ByteOrder.nativeOrder());
        }
        labels = labelBuffer.clear().limit(labelBytes);
        for (PreparedSample sample : batch.samples()) {
            labels.put(sample.patch().label());
        }
        labels.flip();
        staged = batch;
    }
}
