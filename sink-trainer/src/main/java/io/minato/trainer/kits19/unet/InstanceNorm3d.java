package io.minato.trainer.kits19.unet;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/** Instance normalisation of a (N, C, D, H, W) volume, as torch.nn.InstanceNorm3d(affine=True). */
public final class InstanceNorm3d extends AbstractBlock {

    private static final byte VERSION = 1;

    /** DJL's momentum, the weight of the running statistics' old value: 1 leaves them unchanged. */
    private static final float MOMENTUM = 1f;

    private final float eps;
    private final Parameter gamma;
    private final Parameter beta;

    private InstanceNorm3d(Builder builder) {
        super(VERSION);
        this.eps = builder.eps;
        // Shapes are set in prepare(), once the channel count of the input is known.
        gamma =
                addParameter(
                        Parameter.builder().setName("gamma").setType(Parameter.Type.GAMMA).build());
        beta =
                addParameter(
                        Parameter.builder().setName("beta").setType(Parameter.Type.BETA).build());
    }

    /** Returns a builder; the defaults are PyTorch's (eps 1e-5). */
    public static Builder builder() {
        return new Builder();
    }

    /** The epsilon added to the variance. */
    public float eps() {
        return eps;
    }

    @Override
    protected void prepare(Shape[] inputShapes) {
        Shape shape = inputShapes[0];
        if (shape.dimension() != 5) {
            throw new IllegalArgumentException(
                    "InstanceNorm3d expects (N, C, D, H, W), got " + shape);
        }
        gamma.setShape(new Shape(shape.get(1)));
        beta.setShape(new Shape(shape.get(1)));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0]};
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        Shape shape = x.getShape();
        long n = shape.get(0);
        long c = shape.get(1);
        Device device = x.getDevice();
        if (shape.size() == n * c) {
            return new NDList(oneVoxel(x, parameterStore, training));
        }
        NDManager manager = x.getManager();
        // Instance norm is batch norm over (1, N*C, D, H, W) with the batch's own statistics, in
        // evaluation too: libtorch's fused kernel, which keeps only the input, the mean and the
        // inverse deviation for the backward pass. Gamma and beta repeat once per sample.
        NDArray g = parameterStore.getValue(gamma, device, training).tile(n);
        NDArray b = parameterStore.getValue(beta, device, training).tile(n);
        // It updates running statistics in place too; these are thrown away with the step.
        NDArray runningMean = manager.zeros(new Shape(n * c), x.getDataType(), device);
        NDArray runningVar = manager.ones(new Shape(n * c), x.getDataType(), device);
        NDArray folded = x.reshape(1, n * c, shape.get(2), shape.get(3), shape.get(4));
        NDArray y =
                BatchNorm.batchNorm(folded, runningMean, runningVar, g, b, 1, MOMENTUM, eps, true)
                        .singletonOrThrow();
        NDArray out = y.reshape(shape);
        folded.close();
        y.close();
        g.close();
        b.close();
        runningMean.close();
        runningVar.close();
        return new NDList(out);
    }

    /**
     * A volume of one voxel (the bottleneck of a patch of 32), which libtorch's batch norm refuses
     * in training: each value is its own mean, so PyTorch's formula gives gamma * 0 + beta, and the
     * gradient reaches x (as zero) through the centring alone. No scalar operand: DJL makes a
     * scalar from a Java number over a buffer it frees at once, which autograd would read later.
     */
    private NDArray oneVoxel(NDArray x, ParameterStore parameterStore, boolean training) {
        long c = x.getShape().get(1);
        Device device = x.getDevice();
        NDArray centred = x.sub(x);
        NDArray g = parameterStore.getValue(gamma, device, training).reshape(1, c, 1, 1, 1);
        NDArray b = parameterStore.getValue(beta, device, training).reshape(1, c, 1, 1, 1);
        NDArray scaled = centred.mul(g);
        NDArray out = scaled.add(b);
        for (NDArray done : new NDArray[] {centred, g, b, scaled}) {
            done.close();
        }
        return out;
    }

    /** Builder of {@link InstanceNorm3d}. */
    public static final class Builder {
        private float eps = 1e-5f;

        private Builder() {}

        /** The epsilon added to the variance; default 1e-5. */
        public Builder optEps(float eps) {
            if (!(eps > 0)) {
                throw new IllegalArgumentException("eps must be > 0, got " + eps);
            }
            this.eps = eps;
            return this;
        }

        public InstanceNorm3d build() {
            return new InstanceNorm3d(this);
        }
    }
}
