package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.transform.Patch;
import io.minato.transform.Shape3;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The image classifier beyond {@link ImageClassifierTest}: the batches and states that do not fit,
 * each refused in one line.
 */
class ClassifierNetworksTest {
    private static final Shape3 IMAGE = new Shape3(3, 16, 16);

    private static final DjlAccelerator.Settings CNN =
            new DjlAccelerator.Settings(0.5, 0.05f, 0.9f, 1e-3f, true, 2, 3)
                    .withNetwork(new ImageClassifier(2, 0.5));

    @Test
    void shouldRefuseMixedShapesAndImagesTheClassifierCannotTake() {
        float[] v = new float[(int) IMAGE.voxels()];
        Shape3 larger = new Shape3(3, 16, 20);
        Shape3 grey = new Shape3(1, 16, 16);
        Shape3 tiny = new Shape3(3, 4, 4);
        try (DjlAccelerator a = new DjlAccelerator(CNN)) {
            assertThatThrownBy(
                            () ->
                                    a.train(
                                            of(
                                                    7,
                                                    Patch.ofClass(IMAGE, v, 0),
                                                    Patch.ofClass(
                                                            larger,
                                                            new float[(int) larger.voxels()],
                                                            1))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("batch 7 mixes patch shapes");
            assertThatThrownBy(
                            () ->
                                    a.train(
                                            of(
                                                    8,
                                                    Patch.ofClass(
                                                            grey,
                                                            new float[(int) grey.voxels()],
                                                            0))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage(
                            "batch 8 holds images of shape 1x16x16 (channels x height x width);"
                                    + " the classifier takes 3 channels and at least 8x8 pixels");
            assertThatThrownBy(
                            () ->
                                    a.train(
                                            of(
                                                    9,
                                                    Patch.ofClass(
                                                            tiny,
                                                            new float[(int) tiny.voxels()],
                                                            0))))
                    .hasMessageStartingWith("batch 9 holds images of shape 3x4x4");
        }
    }

    @Test
    void shouldRefuseAClassifiersStateInTheUnet() throws Exception {
        byte[] cnn;
        try (DjlAccelerator c = new DjlAccelerator(CNN)) {
            cnn = c.initializedState();
        }
        try (DjlAccelerator u =
                new DjlAccelerator(new DjlAccelerator.Settings(0.125, 0.01f, 0.9f, 0, 3))) {
            u.restore(cnn);
            assertThatThrownBy(u::initializedState)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("the checkpoint holds a cnn2d model; this run trains unet3d");
        }
    }

    private static Batch of(long sequence, Patch... patches) {
        List<PreparedSample> samples = new ArrayList<>();
        for (int i = 0; i < patches.length; i++) {
            samples.add(
                    new PreparedSample(new SampleTask(3, 0, i, 0), SamplePath.FAST, 0, patches[i]));
        }
        return new Batch(0, sequence, samples);
    }
}
