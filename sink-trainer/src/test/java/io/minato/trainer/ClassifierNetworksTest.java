package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.withinPercentage;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import io.minato.data.BadInputException;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.images.ClassifierEvaluation;
import io.minato.trainer.images.ImageClassifier;
import io.minato.trainer.images.ImageClassifier.Architecture;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The image classifiers beyond {@link ImageClassifierTest}: ResNet-18 with batch norm, whose
 * running statistics the accelerator carries without training them; both classifiers as data
 * parallel replicas; and the batches, states and saved models that do not fit, each refused in one
 * line.
 */
class ClassifierNetworksTest {
    private static final Shape3 IMAGE = BrightHalves.IMAGE;

    private static final TrainingSettings CNN = nesterov(new ImageClassifier(2, 0.5));

    private static final TrainingSettings RESNET =
            nesterov(new ImageClassifier(2, 0.25, Architecture.RESNET18));

    /**
     * SGD at 0.05 with Nesterov momentum and weight decay, warmed up over two steps, for {@code
     * network}.
     */
    private static TrainingSettings nesterov(ImageClassifier network) {
        return TrainingSettings.builder()
                .setWidth(network.width())
                .setLearningRate(0.05f)
                .optMomentum(0.9f)
                .optWeightDecay(1e-3f)
                .optNesterov(true)
                .optWarmUp(2, 0f)
                .setSeed(3)
                .build()
                .withNetwork(network);
    }

    /** torchvision's resnet18(num_classes=10) has 11,181,642 trainable values; so has this. */
    @Test
    void shouldBuildTorchvisionsResNet18() {
        ImageClassifier net = new ImageClassifier(10, 1.0, Architecture.RESNET18);
        assertThat(net.modelName()).isEqualTo("resnet18");
        Block block = net.newBlock();
        try (NDManager m = NDManager.newBaseManager(Device.cpu())) {
            block.initialize(m, DataType.FLOAT32, net.initShape());
            long trained = 0;
            int statistics = 0;
            for (Pair<String, Parameter> p : block.getParameters()) {
                if (p.getValue().requiresGradient()) {
                    trained += p.getValue().getArray().size();
                } else {
                    statistics++;
                }
            }
            assertThat(trained).isEqualTo(11_181_642L);
            assertThat(statistics).as("mean and variance of 20 batch norms").isEqualTo(40);
        }
    }

    @Test
    void shouldLearnWithResNetAndSaveTheRunningStatisticsItTrainedWith(@TempDir Path dir)
            throws Exception {
        SplittableRandom r = new SplittableRandom(5);
        // The learning rate falls 1000-fold after 20 steps: the weights settle and the running
        // statistics, which lag weights that move fast, catch up (seen: the held-out top-1 in
        // evaluation mode stays at 0.5 while the training loss is near 0, and reaches 1.0 for every
        // seed tried 40 steps after the decay).
        TrainingSettings settings =
                TrainingSettings.builder()
                        .setWidth(0.25)
                        .setLearningRate(0.02f)
                        .optMomentum(0.9f)
                        .optDecay(List.of(20L), 1e-3f)
                        .setSeed(3)
                        .build()
                        .withNetwork(new ImageClassifier(2, 0.25, Architecture.RESNET18));
        double first;
        double last = Double.NaN;
        try (DjlAccelerator a = new DjlAccelerator(settings)) {
            first = a.train(BrightHalves.batch(0, 0, 8, r)).loss();
            for (int step = 1; step < 60; step++) {
                last = a.train(BrightHalves.batch(0, step, 8, r)).loss();
            }
            a.finish(dir, 0);
            // The running statistics moved (they start at 0 and 1) and are what was saved.
            ImageClassifier net = (ImageClassifier) settings.network();
            try (Model loaded = Model.newInstance(net.modelName(), Device.cpu())) {
                loaded.setBlock(net.newBlock());
                loaded.load(dir.resolve("model-device-0"), net.modelName());
                var mine = a.parameters();
                var saved = loaded.getBlock().getParameters();
                int moved = 0;
                for (int i = 0; i < mine.size(); i++) {
                    float[] values = mine.get(i).getValue().getArray().toFloatArray();
                    assertThat(saved.get(i).getValue().getArray().toFloatArray())
                            .as(mine.get(i).getKey())
                            .isEqualTo(values);
                    if (!mine.get(i).getValue().requiresGradient()) {
                        float start = mine.get(i).getKey().endsWith("runningVar") ? 1f : 0f;
                        moved += values[0] != start ? 1 : 0;
                    }
                }
                assertThat(moved).isEqualTo(40);
            }
        }
        // Scored with the running statistics (evaluation mode): they must fit the weights.
        BrightHalves.assertLearned(first, last, dir, settings, r);
    }

    /**
     * Both classifiers train in mixed precision: batch norm's float32 running statistics with a
     * float16 input and float32 weights. The first step's loss, from the same parameters, is within
     * 3 % of the float32 step's; the steps after it may differ more, as the first steps' gradients
     * overflow the initial loss scale and are skipped (as with PyTorch's GradScaler).
     */
    @Test
    void shouldTrainBothClassifiersInMixedPrecision() throws Exception {
        for (TrainingSettings full : List.of(CNN, RESNET)) {
            SplittableRandom r = new SplittableRandom(9);
            try (DjlAccelerator half = new DjlAccelerator(full.withPrecision(Precision.FP16));
                    DjlAccelerator single = new DjlAccelerator(full)) {
                Batch b = BrightHalves.batch(0, 0, 4, r);
                double expected = single.train(b).loss();
                assertThat(half.train(b).loss())
                        .as(full.network().modelName())
                        .isCloseTo(expected, withinPercentage(3));
                for (int step = 1; step < 4; step++) {
                    assertThat(half.train(BrightHalves.batch(0, step, 4, r)).loss()).isFinite();
                }
                assertThat(half.precision()).isEqualTo(Precision.FP16);
                for (var p : half.parameters()) {
                    float[] values = p.getValue().getArray().toFloatArray();
                    for (float v : values) {
                        assertThat(v).as(p.getKey()).isFinite();
                    }
                    if (p.getKey().endsWith("runningVar")) {
                        assertThat(p.getValue().getArray().getDataType())
                                .isEqualTo(DataType.FLOAT32);
                        assertThat(values[0]).as(p.getKey()).isNotEqualTo(1f);
                    }
                }
            }
        }
    }

    /** Running statistics are state too: leave them out and the continuation differs. */
    @Test
    void shouldContinueResNetBitIdenticallyFromASnapshot() throws Exception {
        Batch b0 = BrightHalves.batch(0, 0, 4, new SplittableRandom(1));
        Batch b1 = BrightHalves.batch(0, 1, 4, new SplittableRandom(2));
        byte[] afterOne;
        byte[] afterTwo;
        double secondLoss;
        try (DjlAccelerator a = new DjlAccelerator(RESNET)) {
            a.train(b0);
            afterOne = a.snapshot();
            secondLoss = a.train(b1).loss();
            afterTwo = a.snapshot();
        }
        try (DjlAccelerator restored = new DjlAccelerator(RESNET)) {
            restored.restore(afterOne);
            assertThat(restored.train(b1).loss()).isEqualTo(secondLoss);
            assertThat(restored.snapshot()).isEqualTo(afterTwo);
            assertThat(restored.step()).isEqualTo(2);
        }
    }

    /**
     * The small CNN as two replicas: identical after every step, and close to one replica on the
     * concatenated batch (it has no batch norm, so the two compute the same function).
     */
    @Test
    void shouldTrainTheCnnAsReplicasLikeOneOnTheConcatenatedBatch() throws Exception {
        try (DjlAccelerator single = new DjlAccelerator(CNN)) {
            replicate(
                    CNN,
                    single,
                    (b0, b1) -> {
                        List<PreparedSample> all = new ArrayList<>(b0.samples());
                        all.addAll(b1.samples());
                        single.train(new Batch(0, b0.sequence(), all));
                    });
        }
    }

    /**
     * ResNet-18 as two replicas: each normalises its own batch, and the running statistics join the
     * all-reduce, so the replicas stay bit-identical, statistics included.
     */
    @Test
    void shouldKeepResNetReplicasIdenticalStatisticsIncluded() throws Exception {
        try (DjlAccelerator start = new DjlAccelerator(RESNET)) {
            replicate(RESNET, start, null);
        }
    }

    private interface Reference {
        void step(Batch b0, Batch b1) throws Exception;
    }

    private static void replicate(
            TrainingSettings settings, DjlAccelerator single, Reference reference)
            throws Exception {
        SplittableRandom r = new SplittableRandom(9);
        try (TwoReplicas replicas = new TwoReplicas(settings, single.initializedState())) {
            for (int step = 0; step < 3; step++) {
                Batch b0 = BrightHalves.batch(0, step, 4, r);
                // Device 1 sits the last step out: it takes the average all the same.
                Batch b1 = step < 2 ? BrightHalves.batch(1, step, 2, r) : null;
                replicas.step(step + 1, b0, b1);
                if (reference != null) {
                    if (b1 == null) {
                        single.train(b0);
                    } else {
                        reference.step(b0, b1);
                    }
                    TwoReplicas.assertClose(replicas.r0, single, step + 1);
                }
            }
            replicas.end();
        }
    }

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
                                            BrightHalves.batchOf(
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
                                            BrightHalves.batchOf(
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
                                            BrightHalves.batchOf(
                                                    9,
                                                    Patch.ofClass(
                                                            tiny,
                                                            new float[(int) tiny.voxels()],
                                                            0))))
                    .hasMessageStartingWith("batch 9 holds images of shape 3x4x4");
        }
    }

    @Test
    void shouldRefuseAClassifiersStateInTheUnetAndTheOtherArchitecture() throws Exception {
        byte[] cnn;
        try (DjlAccelerator c = new DjlAccelerator(CNN)) {
            cnn = c.initializedState();
        }
        try (DjlAccelerator u = new DjlAccelerator(BrightHalves.UNET)) {
            u.restore(cnn);
            assertThatThrownBy(u::initializedState)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("the checkpoint holds a cnn2d model; this run trains unet3d");
        }
        try (DjlAccelerator res = new DjlAccelerator(RESNET)) {
            res.restore(cnn);
            assertThatThrownBy(res::initializedState)
                    .hasMessage("the checkpoint holds a cnn2d model; this run trains resnet18");
        }
    }

    @Test
    void shouldNameTheFolderOfAClassifierOfAnotherShapeOrArchitecture(@TempDir Path dir)
            throws Exception {
        try (DjlAccelerator a = new DjlAccelerator(CNN)) {
            a.train(BrightHalves.batch(0, 0, 2, new SplittableRandom(3)));
            a.finish(dir, 0);
        }
        Path model = dir.resolve("model-device-0");
        List<Patch> one = List.of(BrightHalves.image(0, new SplittableRandom(4)));
        assertThatThrownBy(
                        () ->
                                ClassifierEvaluation.accuracy(
                                        model, new ImageClassifier(2, 1.0), one, Device.cpu()))
                .isInstanceOf(BadInputException.class)
                .hasMessageStartingWith(model + ": the saved model's ")
                .hasMessageEndingWith("; was it trained with these classes and this --width?")
                .hasMessageNotContaining("\n");
        assertThatThrownBy(
                        () ->
                                ClassifierEvaluation.accuracy(
                                        model, new ImageClassifier(3, 0.5), one, Device.cpu()))
                .isInstanceOf(BadInputException.class)
                .hasMessageContaining("was it trained with these classes");
        assertThatThrownBy(
                        () ->
                                ClassifierEvaluation.accuracy(
                                        model,
                                        new ImageClassifier(2, 0.5, Architecture.RESNET18),
                                        one,
                                        Device.cpu()))
                .isInstanceOf(BadInputException.class)
                .hasMessage(model + ": no saved model resnet18-0000.params in this folder");
        // The right network scores it, from any Iterable.
        assertThat(
                        ClassifierEvaluation.accuracy(
                                model, new ImageClassifier(2, 0.5), one::iterator, Device.cpu()))
                .isBetween(0.0, 1.0);
        assertThat(
                        ClassifierEvaluation.accuracy(
                                model, new ImageClassifier(2, 0.5), List.of(), Device.cpu()))
                .isNaN();
    }
}
