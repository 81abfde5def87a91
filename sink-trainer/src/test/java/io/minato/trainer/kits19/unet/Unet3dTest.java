package io.minato.trainer.kits19.unet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.Trainer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class Unet3dTest {

    @Test
    void shouldScaleTheReferenceFiltersByTheWidth() {
        assertThat(Unet3d.scaledFilters(1.0)).containsExactly(32, 64, 128, 256, 320);
        assertThat(Unet3d.scaledFilters(0.125)).containsExactly(4, 8, 16, 32, 40);
        assertThat(Unet3d.builder().optWidth(0.5).build().filters())
                .containsExactly(16, 32, 64, 128, 160);
    }

    @Test
    void shouldMapAVolumeToOneLogitPerClassAndVoxel() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Unet3d unet = Unet3d.builder().optWidth(0.125).build();
            Shape in = new Shape(2, 1, 32, 32, 32);
            unet.initialize(manager, DataType.FLOAT32, in);
            NDArray x = manager.randomNormal(in);
            NDArray y =
                    unet.forward(new ParameterStore(manager, false), new NDList(x), false)
                            .singletonOrThrow();
            assertThat(y.getShape()).isEqualTo(new Shape(2, 3, 32, 32, 32));
            assertThat(unet.getOutputShapes(new Shape[] {in})).containsExactly(y.getShape());
            assertThat(y.isNaN().any().getBoolean()).isFalse();
        }
    }

    @Test
    void shouldLeaveNothingButTheLogitsOpenAfterATrainingForwardPass() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Unet3d unet = Unet3d.builder().optWidth(0.125).build();
            // 64: the deepest level has 2^3 voxels, so every norm is libtorch's batch norm.
            Shape in = new Shape(1, 1, 64, 64, 64);
            unet.initialize(manager, DataType.FLOAT32, in);
            Set<NDArray> parameters = openArrays(manager);
            try (NDManager step = manager.newSubManager();
                    GradientCollector gc = Engine.getInstance().newGradientCollector()) {
                NDArray x = step.randomNormal(in);
                NDArray y =
                        unet.forward(new ParameterStore(step, false), new NDList(x), true)
                                .singletonOrThrow();
                // Intermediates were closed as soon as they were read...
                assertThat(openArrays(step)).containsExactlyInAnyOrder(x, y);
                // (a manager lists its children's arrays too)
                Set<NDArray> left = openArrays(manager);
                left.removeAll(parameters);
                assertThat(left).containsExactlyInAnyOrder(x, y);
                // ... and the backward pass still reaches the first layer.
                gc.backward(y.mean());
                NDArray first = unet.getParameters().get(0).getValue().getArray();
                assertThat(first.getGradient().abs().sum().getFloat()).isPositive();
            }
        }
    }

    /** The arrays of a manager (and its children) that are still open. */
    private static Set<NDArray> openArrays(NDManager manager) {
        Set<NDArray> open = Collections.newSetFromMap(new IdentityHashMap<>());
        for (NDArray array : manager.getManagedArrays()) {
            if (!array.isReleased()) {
                open.add(array);
            }
        }
        return open;
    }

    @Test
    void shouldRefuseAPatchThatCannotBeHalvedFiveTimes() {
        Unet3d unet = Unet3d.builder().optWidth(0.125).build();
        try (NDManager manager = NDManager.newBaseManager()) {
            assertThatThrownBy(
                            () ->
                                    unet.initialize(
                                            manager, DataType.FLOAT32, new Shape(1, 1, 32, 48, 16)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[32, 48, 16]")
                    .hasMessageContaining("divisible by 32");
        }
        assertThatThrownBy(() -> unet.checkInputShape(new Shape(1, 2, 32, 32, 32)))
                .hasMessageContaining("(N, 1, D, H, W)");
        assertThatThrownBy(() -> Unet3d.builder().optWidth(0))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldLearnToSegmentOneSyntheticVolume() {
        int patch = 32;
        Shape shape = new Shape(1, 1, patch, patch, patch);
        float[] image = new float[patch * patch * patch];
        float[] labels = new float[image.length];
        syntheticKidney(patch, image, labels);
        List<Float> losses = new ArrayList<>();
        float[] dice;
        // Fixed initial weights, so that the losses printed are the same on every run.
        Engine.getInstance().setRandomSeed(42);
        try (Model model = Model.newInstance("unet")) {
            model.setBlock(Unet3d.builder().optWidth(0.125).build());
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(DiceCeLoss.builder().build())
                            .optOptimizer(
                                    Optimizer.sgd()
                                            .setLearningRateTracker(Tracker.fixed(0.1f))
                                            .optMomentum(0.9f)
                                            .build());
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.initialize(shape);
                for (int step = 0; step < Integer.getInteger("unet.steps", 30); step++) {
                    try (NDManager scope = model.getNDManager().newSubManager();
                            GradientCollector gc = trainer.newGradientCollector()) {
                        NDList prediction = trainer.forward(new NDList(scope.create(image, shape)));
                        NDArray loss =
                                trainer.getLoss()
                                        .evaluate(
                                                new NDList(scope.create(labels, shape)),
                                                prediction);
                        gc.backward(loss);
                        losses.add(loss.getFloat());
                    }
                    trainer.step();
                }
                try (NDManager scope = model.getNDManager().newSubManager()) {
                    NDArray predicted =
                            trainer.evaluate(new NDList(scope.create(image, shape)))
                                    .singletonOrThrow()
                                    .argMax(1);
                    dice = DiceCeLoss.dice(predicted, scope.create(labels, shape));
                }
            }
        }
        System.out.println("unet training losses: " + losses);
        System.out.println("unet Dice after training (kidney, tumour): " + Arrays.toString(dice));
        assertThat(losses.get(losses.size() - 1)).isLessThan(0.7f * losses.get(0));
    }

    /** A bright cube (kidney, 1) holding a brighter small cube (tumour, 2) in a dark volume. */
    static void syntheticKidney(int patch, float[] image, float[] labels) {
        int lo = patch / 4;
        int hi = 3 * patch / 4;
        for (int d = 0; d < patch; d++) {
            for (int h = 0; h < patch; h++) {
                for (int w = 0; w < patch; w++) {
                    int i = (d * patch + h) * patch + w;
                    boolean kidney = in(d, lo, hi) && in(h, lo, hi) && in(w, lo, hi);
                    boolean tumour =
                            in(d, lo + 2, lo + 10)
                                    && in(h, lo + 2, lo + 10)
                                    && in(w, lo + 2, lo + 10);
                    image[i] = tumour ? 2f : kidney ? 1f : -1f;
                    labels[i] = tumour ? 2 : kidney ? 1 : 0;
                }
            }
        }
    }

    private static boolean in(int x, int lo, int hi) {
        return x >= lo && x < hi;
    }
}
