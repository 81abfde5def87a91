package io.minato.trainer.kits19.unet;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.loss.Loss;

/**
 * The MLPerf 3D-UNet loss (mlcommons/training, image_segmentation/pytorch/model/losses.py): (mean
 * Dice loss + cross-entropy) / 2 over softmax logits (N, C, D, H, W) and integer labels (N, 1, D,
 * H, W) or (N, D, H, W).
 *
 * <p>As the reference: labels one-hot over C classes, Dice per sample and class with smooth_nr =
 * smooth_dr = 1e-6, then averaged over batch and classes; background is left out of the Dice term
 * unless {@link Builder#optIncludeBackground} (the reference's --include_background, default off);
 * the cross-entropy is the mean over all voxels and includes every class.
 */
public final class DiceCeLoss extends Loss {

    /** The reference's smooth_nr and smooth_dr. */
    public static final float SMOOTH = 1e-6f;

    private final boolean includeBackground;

    private DiceCeLoss(Builder builder) {
        super(builder.name);
        this.includeBackground = builder.includeBackground;
    }

    /** Returns a builder: name "dice_ce_loss", background excluded from the Dice term. */
    public static Builder builder() {
        return new Builder();
    }

    /** Whether the background class counts in the Dice term. */
    public boolean includeBackground() {
        return includeBackground;
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        NDArray logits = predictions.singletonOrThrow();
        Shape shape = logits.getShape();
        if (shape.dimension() != 5) {
            throw new IllegalArgumentException(
                    "DiceCeLoss expects logits (N, C, D, H, W), got " + shape);
        }
        long n = shape.get(0);
        int classes = Math.toIntExact(shape.get(1));
        if (classes < 2 && !includeBackground) {
            throw new IllegalArgumentException(
                    "DiceCeLoss without background needs at least 2 classes, got " + shape);
        }
        NDArray oneHot =
                oneHot(labels.singletonOrThrow(), n, classes, shape.size() / (n * classes));
        // Shapes (N, C, V): the PyTorch engine reduces one axis at a time.
        NDArray logProb = logits.reshape(n, classes, -1).logSoftmax(1);
        NDArray crossEntropy = logProb.mul(oneHot).sum(new int[] {1}).mean().neg();

        NDArray prob = logProb.exp();
        NDArray target = oneHot;
        if (!includeBackground) {
            prob = prob.get(":, 1:, :");
            target = target.get(":, 1:, :");
        }
        NDArray intersection = prob.mul(target).sum(new int[] {2});
        NDArray denominator = target.sum(new int[] {2}).add(prob.sum(new int[] {2}));
        // No arithmetic with a Java number here. DJL copies such a number from a host buffer to
        // the device, a copy that waits for all the work queued before it, every step; and it
        // frees that buffer at once, while autograd keeps a factor to scale the gradient with.
        // A full() array is filled where it lives, in memory libtorch owns.
        NDManager manager = logits.getManager();
        NDArray smooth = scalar(manager, SMOOTH);
        NDArray dice = intersection.add(intersection).add(smooth).div(denominator.add(smooth));
        NDArray diceLoss = scalar(manager, 1f).sub(dice).mean();
        return diceLoss.add(crossEntropy).div(scalar(manager, 2f));
    }

    private static NDArray scalar(NDManager manager, float value) {
        return manager.full(new Shape(), value, DataType.FLOAT32);
    }

    /**
     * Dice per foreground class (1 = kidney, 2 = tumour, ...) between predicted and true label
     * volumes, each (N, [1,] D, H, W), averaged over the batch, as the reference's DiceScore: a
     * class absent from both prediction and truth of a sample scores 1 there.
     *
     * @return index k-1 holds the Dice of class k, for k = 1 .. classes-1
     */
    public static float[] dice(NDArray predicted, NDArray truth, int classes) {
        if (predicted.size() != truth.size()) {
            throw new IllegalArgumentException(
                    "dice: prediction "
                            + predicted.getShape()
                            + " and truth "
                            + truth.getShape()
                            + " differ in size");
        }
        long n = predicted.getShape().get(0);
        long voxels = predicted.size() / n;
        NDArray p = oneHot(predicted, n, classes, voxels).get(":, 1:, :");
        NDArray t = oneHot(truth, n, classes, voxels).get(":, 1:, :");
        NDArray intersection = p.mul(t).sum(new int[] {2});
        NDArray denominator = p.sum(new int[] {2}).add(t.sum(new int[] {2}));
        return intersection
                .mul(2)
                .add(SMOOTH)
                .div(denominator.add(SMOOTH))
                .mean(new int[] {0})
                .toFloatArray();
    }

    /** {@link #dice(NDArray, NDArray, int)} for KiTS19's 3 classes: {kidney, tumour}. */
    public static float[] dice(NDArray predicted, NDArray truth) {
        return dice(predicted, truth, 3);
    }

    /** Integer labels -> float one-hot (N, C, V), by comparison with 0 .. C-1. */
    private static NDArray oneHot(NDArray labels, long n, int classes, long voxels) {
        if (labels.size() != n * voxels) {
            throw new IllegalArgumentException(
                    "labels "
                            + labels.getShape()
                            + " do not match "
                            + n
                            + " samples of "
                            + voxels
                            + " voxels; give (N, 1, D, H, W) or (N, D, H, W)");
        }
        NDArray flat = labels.toType(DataType.INT32, false).reshape(n, 1, voxels);
        NDArray ids = labels.getManager().arange(classes).reshape(1, classes, 1);
        return flat.eq(ids).toType(DataType.FLOAT32, false);
    }

    /** Builder of {@link DiceCeLoss}. */
    public static final class Builder {
        private String name = "dice_ce_loss";
        private boolean includeBackground;

        private Builder() {}

        /** The loss's name in DJL's accumulators and logs. */
        public Builder optName(String name) {
            this.name = name;
            return this;
        }

        /** Whether background counts in the Dice term; default false, as the reference. */
        public Builder optIncludeBackground(boolean includeBackground) {
            this.includeBackground = includeBackground;
            return this;
        }

        public DiceCeLoss build() {
            return new DiceCeLoss(this);
        }
    }
}
