package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Device;
import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.images.ClassifierEvaluation;
import io.minato.trainer.images.ImageClassifier;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The accelerator with the images workload's network: a real DJL classifier learns a task a CNN
 * must see (which half of the image is bright), its state travels through snapshots, and batches or
 * states of the other workload fail in one line.
 */
class ImageClassifierTest {

    private static final Shape3 IMAGE = BrightHalves.IMAGE;

    private static final TrainingSettings SETTINGS =
            TrainingSettings.builder()
                    .setWidth(0.5)
                    .setLearningRate(0.05f)
                    .optMomentum(0.9f)
                    .setSeed(3)
                    .build()
                    .withNetwork(new ImageClassifier(2, 0.5));

    private static Batch batch(long sequence, int size, SplittableRandom r) {
        return BrightHalves.batch(0, sequence, size, r);
    }

    /** In float32, and in mixed precision (float16 steps over float32 masters). */
    @ParameterizedTest
    @EnumSource(
            value = Precision.class,
            names = {"FP32", "FP16"})
    void shouldLearnWhichHalfIsBrightAndScoreTheSavedModel(Precision precision, @TempDir Path dir)
            throws Exception {
        TrainingSettings settings = SETTINGS.withPrecision(precision);
        SplittableRandom r = new SplittableRandom(11);
        double first;
        double last = Double.NaN;
        try (DjlAccelerator a = new DjlAccelerator(settings)) {
            first = a.train(batch(0, 8, r)).loss();
            for (int step = 1; step < 40; step++) {
                last = a.train(batch(step, 8, r)).loss();
            }
            a.finish(dir, 0);
        }
        assertThat(first).isFinite().isPositive();
        BrightHalves.assertLearned(first, last, dir, settings, r);
    }

    @Test
    void shouldCarryTheClassifiersParametersThroughASnapshot() throws Exception {
        Batch b = batch(0, 4, new SplittableRandom(1));
        byte[] afterOneStep;
        byte[] afterTwoSteps;
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            a.train(b);
            afterOneStep = a.snapshot();
            a.train(b);
            afterTwoSteps = a.snapshot();
        }
        try (DjlAccelerator restored = new DjlAccelerator(SETTINGS)) {
            restored.restore(afterOneStep);
            restored.train(b);
            assertThat(restored.snapshot()).isEqualTo(afterTwoSteps);
        }
    }

    @Test
    void shouldRefuseTheOtherWorkloadsTargetsAndStateInOneLine() throws Exception {
        SplittableRandom r = new SplittableRandom(2);
        float[] v = new float[(int) IMAGE.voxels()];
        Batch dense = BrightHalves.batchOf(5, new Patch(IMAGE, v, new byte[v.length]));
        try (DjlAccelerator a = new DjlAccelerator(SETTINGS)) {
            assertThatThrownBy(() -> a.train(dense))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("batch 5 holds a dense label");
            Batch tooHigh = BrightHalves.batchOf(6, Patch.ofClass(IMAGE, v, 7));
            assertThatThrownBy(() -> a.train(tooHigh))
                    .hasMessageContaining("holds class 7; the classifier has 2 classes");
        }
        byte[] unet;
        try (DjlAccelerator u = new DjlAccelerator(BrightHalves.UNET)) {
            unet = u.initializedState();
            assertThatThrownBy(() -> u.train(batch(0, 2, r)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("holds a class-index target; the 3D-UNet");
        }
        try (DjlAccelerator c = new DjlAccelerator(SETTINGS)) {
            c.restore(unet);
            assertThatThrownBy(() -> c.train(batch(0, 2, r)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("the checkpoint holds a unet3d model; this run trains cnn2d");
        }
    }

    @Test
    void shouldNameTheFolderWithoutASavedClassifier(@TempDir Path dir) {
        assertThatThrownBy(
                        () ->
                                ClassifierEvaluation.accuracy(
                                        dir, new ImageClassifier(2, 0.5), List.of(), Device.cpu()))
                .isInstanceOf(BadInputException.class)
                .hasMessage(dir + ": no saved model cnn2d-0000.params in this folder");
    }
}
