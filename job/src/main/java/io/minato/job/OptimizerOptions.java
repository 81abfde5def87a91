package io.minato.job;

import io.minato.trainer.TrainingSettings;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * SGD and its learning-rate schedule (the MLPerf reference's warm-up and step decay): shared by
 * train and step-time. The values are checked together where they become {@link TrainingSettings}.
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
                            + " (default: none).")
    List<Long> lrDecaySteps = new ArrayList<>();

    @Option(
            names = "--lr-decay-factor",
            paramLabel = "F",
            description = "Learning-rate factor at each decay step (default: ${DEFAULT-VALUE}).")
    float lrDecayFactor = 1f;

    /**
     * The optimizer for a network of {@code width} whose workload trains at {@code
     * defaultLearningRate} unless told otherwise; its checks fail with an {@link
     * IllegalArgumentException}.
     */
    public TrainingSettings settings(double width, float defaultLearningRate, long seed) {
        return TrainingSettings.builder()
                .setWidth(width)
                .setLearningRate(learningRate != null ? learningRate : defaultLearningRate)
                .optMomentum(momentum)
                .optWeightDecay(weightDecay)
                .optNesterov(nesterov)
                .optWarmUp(warmupSteps, warmupStartLr)
                .optDecay(lrDecaySteps, lrDecayFactor)
                .setSeed(seed)
                .build();
    }
}
