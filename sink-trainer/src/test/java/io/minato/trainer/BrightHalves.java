package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.Device;
import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.images.ClassifierEvaluation;
import io.minato.trainer.images.ImageClassifier;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The image classifiers' toy task: 3x16x16 noisy images of two classes, told apart by which half is
 * bright; a classifier that learns it scores near 1.
 */
final class BrightHalves {
    private BrightHalves() {}

    static final Shape3 IMAGE = new Shape3(3, 16, 16);

    /** A small 3D-UNet: the other workload's network, which takes none of these images. */
    static final TrainingSettings UNET =
            TrainingSettings.builder()
                    .setWidth(0.125)
                    .setLearningRate(0.01f)
                    .optMomentum(0.9f)
                    .setSeed(3)
                    .build();

    /** Class 1: the left half bright; class 0: the right half; noise everywhere. */
    static Patch image(int cls, SplittableRandom r) {
        float[] v = new float[(int) IMAGE.voxels()];
        for (int c = 0, i = 0; c < 3; c++) {
            for (int y = 0; y < 16; y++) {
                for (int x = 0; x < 16; x++, i++) {
                    boolean bright = cls == 1 ? x < 8 : x >= 8;
                    v[i] = (bright ? 1f : -1f) + (float) (0.5 * r.nextGaussian());
                }
            }
        }
        return Patch.ofClass(IMAGE, v, cls);
    }

    /** Batch {@code sequence} of {@code size} images for {@code device}, the classes in turn. */
    static Batch batch(int device, long sequence, int size, SplittableRandom r) {
        List<PreparedSample> samples = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            int cls = (int) ((sequence + i) % 2);
            samples.add(
                    new PreparedSample(
                            new SampleTask(3, 0, sequence * size + i, cls),
                            SamplePath.FAST,
                            0,
                            image(cls, r)));
        }
        return new Batch(device, sequence, samples);
    }

    /** Batch {@code sequence} of device 0 holding {@code patches}, whatever they are. */
    static Batch batchOf(long sequence, Patch... patches) {
        List<PreparedSample> samples = new ArrayList<>();
        for (int i = 0; i < patches.length; i++) {
            samples.add(
                    new PreparedSample(new SampleTask(3, 0, i, 0), SamplePath.FAST, 0, patches[i]));
        }
        return new Batch(0, sequence, samples);
    }

    /**
     * Checks that a run of {@code settings} learned the task: its loss fell from {@code first} to
     * {@code last} below half, and the model it saved in {@code dir} (device 0's) scores a top-1 of
     * 0.9 or more on 32 new images.
     */
    static void assertLearned(
            double first, double last, Path dir, TrainingSettings settings, SplittableRandom r)
            throws IOException, BadInputException {
        assertThat(last).isLessThan(first / 2);
        List<Patch> held = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            held.add(image(i % 2, r));
        }
        double top1 =
                ClassifierEvaluation.accuracy(
                        dir.resolve("model-device-0"),
                        (ImageClassifier) settings.network(),
                        held,
                        Device.cpu());
        assertThat(top1).isGreaterThanOrEqualTo(0.9);
    }
}
