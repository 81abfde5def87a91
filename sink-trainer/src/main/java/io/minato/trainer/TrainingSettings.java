package io.minato.trainer;

import ai.djl.training.tracker.Tracker;
import ai.djl.training.tracker.WarmUpTracker;
import io.minato.trainer.kits19.Unet3dNetwork;
import java.io.Serializable;
import java.util.List;

/**
 * What {@link DjlAccelerator} trains and how: the network and its width, the optimizer and the
 * seed, made by {@link #builder()} (the train command holds the defaults). The learning rate
 * schedule is the MLPerf reference's, in DJL's trackers ({@link #learningRates()}): a linear
 * warm-up from {@code warmupStartLearningRate} to {@code learningRate} over {@code warmupSteps}
 * global steps, then multiplied by {@code decayFactor} at each of {@code decaySteps} (its
 * MultiStepLR milestones, here in steps). The {@link Precision} is the step's number format.
 */
public record TrainingSettings(
        double width,
        float learningRate,
        float momentum,
        float weightDecay,
        boolean nesterov,
        int warmupSteps,
        long seed,
        float warmupStartLearningRate,
        List<Long> decaySteps,
        float decayFactor,
        Network network,
        Precision precision)
        implements Serializable {
    public TrainingSettings {
        if (network == null) {
            network = new Unet3dNetwork(width);
        }
        if (precision == null) {
            precision = Precision.AUTO;
        }
        if (!(width > 0)
                || !(learningRate >= 0)
                || !(momentum >= 0)
                || !(weightDecay >= 0)
                || !(warmupStartLearningRate >= 0)
                || !(decayFactor > 0)) {
            throw new IllegalArgumentException(
                    "width and decay factor must be > 0; learning rates, momentum and weight"
                            + " decay >= 0");
        }
        if (warmupSteps < 0) {
            throw new IllegalArgumentException("warm-up steps must be >= 0: " + warmupSteps);
        }
        decaySteps = List.copyOf(decaySteps);
        for (int i = 0; i < decaySteps.size(); i++) {
            if (decaySteps.get(i) < 1 || (i > 0 && decaySteps.get(i) <= decaySteps.get(i - 1))) {
                throw new IllegalArgumentException(
                        "decay steps must be increasing and >= 1: " + decaySteps);
            }
        }
        // DJL's warm-up ends at its main tracker's first rate: a decay within it would be
        // ramped to rather than applied at its step.
        if (!decaySteps.isEmpty() && decaySteps.get(0) <= warmupSteps) {
            throw new IllegalArgumentException(
                    "decay steps must come after the "
                            + warmupSteps
                            + " warm-up steps: "
                            + decaySteps);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The same optimizer training another network. */
    public TrainingSettings withNetwork(Network other) {
        return toBuilder().optNetwork(other).build();
    }

    /** The same settings in another precision (a run resolves {@link Precision#AUTO}). */
    public TrainingSettings withPrecision(Precision other) {
        return toBuilder().optPrecision(other).build();
    }

    /** A builder holding these settings. */
    private Builder toBuilder() {
        return builder()
                .setWidth(width)
                .setLearningRate(learningRate)
                .optMomentum(momentum)
                .optWeightDecay(weightDecay)
                .optNesterov(nesterov)
                .optWarmUp(warmupSteps, warmupStartLearningRate)
                .setSeed(seed)
                .optDecay(decaySteps, decayFactor)
                .optNetwork(network)
                .optPrecision(precision);
    }

    /**
     * The learning rate of each global step, counted from 1 (a trainer passes the steps past {@link
     * Integer#MAX_VALUE}, which DJL's trackers cannot count, as that one): DJL's linear {@link
     * WarmUpTracker} in front of the decay's {@link MultiStepTracker}, or of a fixed rate. Neither
     * keeps state: any order of steps gives the same rates.
     */
    public Tracker learningRates() {
        Tracker main =
                decaySteps.isEmpty()
                        ? Tracker.fixed(learningRate)
                        : new MultiStepTracker(
                                learningRate,
                                decaySteps.stream().map(s -> s - warmupSteps).toList(),
                                decayFactor);
        return Tracker.warmUp()
                .optWarmUpBeginValue(warmupStartLearningRate)
                .optWarmUpSteps(warmupSteps)
                .setMainTracker(main)
                .build();
    }

    /**
     * Builds {@link TrainingSettings}: {@code set*} what every run names, {@code opt*} the rest
     * (PyTorch SGD's defaults: no momentum, weight decay or Nesterov; no warm-up, no decay; the
     * 3D-UNet of the width).
     */
    public static final class Builder {
        private double width = Double.NaN;
        private float learningRate = Float.NaN;
        private Long seed;
        private float momentum;
        private float weightDecay;
        private boolean nesterov;
        private int warmupSteps;
        private float warmupStartLearningRate;
        private List<Long> decaySteps = List.of();
        private float decayFactor = 1f;
        private Network network;
        private Precision precision = Precision.AUTO;

        private Builder() {}

        /** The network's width: its channels times this. */
        public Builder setWidth(double width) {
            this.width = width;
            return this;
        }

        /** The rate after the warm-up and before any decay. */
        public Builder setLearningRate(float learningRate) {
            this.learningRate = learningRate;
            return this;
        }

        /** The seed of the model's initial parameters. */
        public Builder setSeed(long seed) {
            this.seed = seed;
            return this;
        }

        public Builder optMomentum(float momentum) {
            this.momentum = momentum;
            return this;
        }

        public Builder optWeightDecay(float weightDecay) {
            this.weightDecay = weightDecay;
            return this;
        }

        public Builder optNesterov(boolean nesterov) {
            this.nesterov = nesterov;
            return this;
        }

        /** A linear warm-up over the first {@code steps} global steps from {@code startRate}. */
        public Builder optWarmUp(int steps, float startRate) {
            this.warmupSteps = steps;
            this.warmupStartLearningRate = startRate;
            return this;
        }

        /** The rate times {@code factor} from each of {@code steps} on (global steps). */
        public Builder optDecay(List<Long> steps, float factor) {
            this.decaySteps = steps;
            this.decayFactor = factor;
            return this;
        }

        /** Another network than the 3D-UNet of the width. */
        public Builder optNetwork(Network network) {
            this.network = network;
            return this;
        }

        /** The step's number format; default {@link Precision#AUTO}. */
        public Builder optPrecision(Precision precision) {
            this.precision = precision;
            return this;
        }

        public TrainingSettings build() {
            if (Double.isNaN(width) || Float.isNaN(learningRate) || seed == null) {
                throw new IllegalStateException("width, learning rate and seed must be set");
            }
            return new TrainingSettings(
                    width,
                    learningRate,
                    momentum,
                    weightDecay,
                    nesterov,
                    warmupSteps,
                    seed,
                    warmupStartLearningRate,
                    decaySteps,
                    decayFactor,
                    network,
                    precision);
        }
    }
}
