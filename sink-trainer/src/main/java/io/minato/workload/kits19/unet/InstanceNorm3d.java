package io.minato.workload.kits19.unet;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/** Instance normalisation of a (N, C, D, H, W) volume, as torch.nn.InstanceNorm3d(affine=True). */
public final class InstanceNorm3d extends AbstractBlock {

    private static final byte VERSION = 1;

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
        // The PyTorch engine refuses mean over several axes, so flatten D*H*W into one axis.
        NDArray flat = x.reshape(n, c, -1);
        NDArray centred = flat.sub(flat.mean(new int[] {2}, true));
        // Biased variance, as PyTorch's instance norm uses for normalising.
        NDArray variance = centred.square().mean(new int[] {2}, true);
        NDArray normalised = centred.div(variance.add(eps).sqrt());
        NDArray g = parameterStore.getValue(gamma, device, training).reshape(1, c, 1);
        NDArray b = parameterStore.getValue(beta, device, training).reshape(1, c, 1);
        return new NDList(normalised.mul(g).add(b).reshape(shape));
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
