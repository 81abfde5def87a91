package io.minato.trainer.kits19.unet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import io.minato.spi.Shape3;
import org.junit.jupiter.api.Test;

class SlidingWindowTest {

    /** Logits (0, x, -x): class 1 where the image is positive, 2 where negative, 0 at zero. */
    static final class SignBlock extends AbstractBlock {
        @Override
        protected NDList forwardInternal(
                ParameterStore store,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            NDArray x = inputs.singletonOrThrow();
            return new NDList(NDArrays.concat(new NDList(x.zerosLike(), x, x.neg()), 1));
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputs) {
            Shape s = inputs[0];
            return new Shape[] {new Shape(s.get(0), 3, s.get(2), s.get(3), s.get(4))};
        }
    }

    @Test
    void shouldReassembleEveryVoxelOfALargerVolumeFromOverlappingWindows() {
        Shape3 s = new Shape3(45, 40, 70);
        float[] image = new float[(int) s.voxels()];
        byte[] expected = new byte[image.length];
        for (int z = 0, i = 0; z < s.d(); z++) {
            for (int y = 0; y < s.h(); y++) {
                for (int x = 0; x < s.w(); x++, i++) {
                    // A checkerboard of 7-voxel blocks of sign, never zero.
                    boolean positive = ((z / 7) + (y / 7) + (x / 7)) % 2 == 0;
                    image[i] = positive ? 0.5f + x * 0.01f : -0.5f - y * 0.01f;
                    expected[i] = (byte) (positive ? 1 : 2);
                }
            }
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            byte[] predicted = new SlidingWindow(new SignBlock(), 32, 3).predict(manager, image, s);
            assertThat(predicted).isEqualTo(expected);
        }
    }

    @Test
    void shouldPadAVolumeSmallerThanThePatchAndCropTheAnswerBack() {
        Shape3 s = new Shape3(10, 20, 33);
        float[] image = new float[(int) s.voxels()];
        byte[] expected = new byte[image.length];
        for (int i = 0; i < image.length; i++) {
            image[i] = i % 3 == 0 ? -1 : 1;
            expected[i] = (byte) (i % 3 == 0 ? 2 : 1);
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            assertThat(new SlidingWindow(new SignBlock(), 32, 4).predict(manager, image, s))
                    .isEqualTo(expected);
        }
    }

    @Test
    void shouldTileEachAxisWithHalfPatchStridesEndingFlushWithTheVolume() {
        SlidingWindow w = new SlidingWindow(new SignBlock(), 32, 1);
        assertThat(w.starts(32)).containsExactly(0);
        assertThat(w.starts(48)).containsExactly(0, 16);
        assertThat(w.starts(70)).containsExactly(0, 16, 32, 38);
    }

    @Test
    void shouldWeightWindowCentresMostWithAGaussianOfSigmaAnEighthOfThePatch() {
        float[] g = SlidingWindow.gaussian(32);
        int centre = (16 * 32 + 16) * 32 + 16;
        assertThat(g[centre]).isCloseTo(1f, within(0.03f)); // half a voxel off the true centre
        assertThat(g[0]).isLessThan(g[centre] / 1000);
        assertThat(g[0]).isPositive();
    }

    @Test
    void shouldScoreDicePerClass() {
        byte[] truth = {0, 1, 1, 2, 2, 0};
        byte[] pred = {0, 1, 0, 2, 1, 0};
        assertThat(SlidingWindow.dice(pred, truth, 1)).isCloseTo(2.0 / 4, within(1e-9));
        assertThat(SlidingWindow.dice(pred, truth, 2)).isCloseTo(2.0 / 3, within(1e-9));
        assertThat(SlidingWindow.dice(new byte[] {0}, new byte[] {0}, 2)).isEqualTo(1.0);
    }
}
