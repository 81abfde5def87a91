package io.minato.job;

import io.minato.trainer.Precision;
import io.minato.trainer.TrainingSettings;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * SGD and its learning-rate schedule (the MLPerf reference's warm-up and step decay), and the
 * step's precision: shared by train and step-time. The values are checked together where they
 * become {@link TrainingSettings}.
 */
public final class OptimizerOptions {

    @Option(
            names = "--learning-rate",
            paramLabel = "LR",
            description =
                    "SGD learning rate, reached after the warm-up (default: 0.1; 0.002 for"
                            + " --workload images, whose small CNN has no normalisation layers).")
    Float learningRate;

    @Option(
            names = "--momentum",
            paramLabel = "M",
            description = "SGD momentum (default: ${DEFAULT-VALUE}).")
    float momentum = 0.9f;

    @Option(
            names = "--weight-decay",
            paramLabel = "WD",
            description = "L2 weight decay, as PyTorch's SGD (default: ${DEFAULT-VALUE}).")
    float weightDecay = 0f;

    @Option(names = "--nesterov", description = "Nesterov momentum (default: off).")
    boolean nesterov;

    @Option(
            names = "--warmup-steps",
            paramLabel = "N",
            description =
                    "Global steps of linear learning-rate warm-up from 0 (default: ${DEFAULT-VALUE}).")
    int warmupSteps = 20;

    @Option(
            names = "--warmup-start-lr",
            paramLabel = "LR",
            description = "Learning rate the warm-up starts from (default: ${DEFAULT-VALUE}).")
    float warmupStartLr = 0f;

    @Option(
            names = "--lr-decay-steps",
            split = ",",
            paramLabel = "S",
            description =
                    "Global steps after which the learning rate is multiplied by --lr-decay-factor"
                            + " (default: none; train on the demo set: "
                            + DemoSchedule.DECAY_STEP
                            + ").")
    List<Long> lrDecaySteps;

    @Option(
            names = "--lr-decay-factor",
            paramLabel = "F",
            description =
                    "Learning-rate factor at each decay step (default: 1; train on the demo set: "
                            + DemoSchedule.DECAY_FACTOR
                            + ").")
    Float lrDecayFactor;

    @Option(
            names = "--precision",
            paramLabel = "auto|fp32|fp16",
            converter = PrecisionConverter.class,
            description =
                    "The training step's number format: fp32; fp16, mixed precision (float16"
                            + " forward and backward passes over float32 master parameters, with"
                            + " a dynamic loss scale); or auto: fp16 where every device is a GPU,"
                            + " fp32 otherwise (default: auto).")
    Precision precision = Precision.AUTO;

    /** Parses {@code --precision}. */
    static final class PrecisionConverter extends TrainCommand.Parsed<Precision> {
        PrecisionConverter() {
            super(Precision::parse);
        }
    }

    /** The optimizer these options set, with no decay where they give none. */
    public TrainingSettings settings(double width, float defaultLearningRate, long seed) {
        return settings(width, defaultLearningRate, seed, List.of(), 1f);
    }

    /**
     * The optimizer these options set, the learning rate and the decay they leave out taken from
     * the defaults given.
     */
    public TrainingSettings settings(
            double width,
            float defaultLearningRate,
            long seed,
            List<Long> defaultDecaySteps,
            float defaultDecayFactor) {
        return TrainingSettings.builder()
                .setWidth(width)
                .setLearningRate(learningRate != null ? learningRate : defaultLearningRate)
                .optMomentum(momentum)
                .optWeightDecay(weightDecay)
                .optNesterov(nesterov)
                .optWarmUp(warmupSteps, warmupStartLr)
                .optDecay(
                        lrDecaySteps != null ? lrDecaySteps : defaultDecaySteps,
                        lrDecayFactor != null ? lrDecayFactor : defaultDecayFactor)
                .setSeed(seed)
                .optPrecision(precision)
                .build();
    }
}
