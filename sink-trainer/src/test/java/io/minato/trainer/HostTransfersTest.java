package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.trainer.images.ImageClassifier;
import io.minato.trainer.images.ImageClassifier.Architecture;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.IntFunction;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What crosses between the host and the device in a training step: the batch going up, one copy for
 * its images and one for its labels, and the loss coming down, one value. On a GPU each crossing
 * waits for the work queued before it (DJL copies a Java number to the device from a host buffer,
 * synchronously), so a scalar made from a Java number inside the step stalls the step. Counted on
 * the CPU, where DJL makes the same calls into its JNI.
 */
class HostTransfersTest {
    private static final int STEPS = 2;

    @ParameterizedTest
    @EnumSource(
            value = Precision.class,
            names = {"FP32", "FP16"})
    void shouldSendTheUnetOnlyItsBatchAndReadOnlyItsLoss(Precision precision) throws Exception {
        TrainingSettings settings =
                TrainingSettings.builder()
                        .setWidth(0.125)
                        .setLearningRate(0.01f)
                        .optMomentum(0.9f)
                        .optWeightDecay(1e-3f)
                        .optWarmUp(4, 0f)
                        .setSeed(3)
                        .optPrecision(precision)
                        .build();
        assertTransfersPerStep(settings, DjlAcceleratorTest::batch);
    }

    @ParameterizedTest
    @ValueSource(strings = {"CNN", "RESNET18"})
    void shouldSendAClassifierOnlyItsBatchAndReadOnlyItsLoss(String architecture) throws Exception {
        ImageClassifier network = new ImageClassifier(2, 0.25, Architecture.valueOf(architecture));
        TrainingSettings settings =
                TrainingSettings.builder()
                        .setWidth(network.width())
                        .setLearningRate(0.05f)
                        .optMomentum(0.9f)
                        .optNesterov(true)
                        .optWarmUp(4, 0f)
                        .setSeed(3)
                        .build()
                        .withNetwork(network);
        SplittableRandom r = new SplittableRandom(5);
        assertTransfersPerStep(settings, k -> BrightHalves.batch(0, k, 4, r));
    }

    /**
     * Steps after the first (which builds the model and its state) while the learning rate still
     * warms up, so that a rate that changes every step is among what is counted.
     */
    private static void assertTransfersPerStep(TrainingSettings settings, IntFunction<Batch> batch)
            throws Exception {
        try (DjlAccelerator a = new DjlAccelerator(settings)) {
            a.train(batch.apply(0));
            Map<String, Long> calls =
                    JniCalls.during(
                            "io/minato/trainer/DjlAccelerator.train",
                            () -> {
                                for (int k = 1; k <= STEPS; k++) {
                                    a.train(batch.apply(k), batch.apply(k + 1));
                                }
                            });
            assertThat(calls)
                    .as("the calls the steps made into DJL's JNI")
                    .containsKey("convolution");
            assertThat(calls.getOrDefault(JniCalls.FROM_HOST, 0L))
                    .as("arrays made from host buffers in %d steps: %s", STEPS, calls)
                    .isEqualTo(2L * STEPS);
            assertThat(calls.getOrDefault(JniCalls.TO_HOST, 0L))
                    .as("arrays read to the host in %d steps: %s", STEPS, calls)
                    .isEqualTo(STEPS);
        }
    }
}
