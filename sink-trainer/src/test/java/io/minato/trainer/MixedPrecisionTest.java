package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Device;
import ai.djl.Model;
import io.minato.sample.Batch;
import io.minato.trainer.gpu.TrainingDevice;
import io.minato.trainer.kits19.unet.Unet3d;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mixed-precision steps ({@link Precision#FP16}) of the real 3D-UNet on the CPU, whose float16
 * kernels are slow but compute what a GPU's do: float16 forward and backward passes from float32
 * masters, the dynamic loss scale, skipped steps, checkpoints.
 */
class MixedPrecisionTest {
    private static final TrainingSettings FP32 =
            TrainingSettings.builder()
                    .setWidth(0.125)
                    .setLearningRate(0.01f)
                    .optMomentum(0.9f)
                    .optWeightDecay(1e-3f)
                    .optWarmUp(2, 0f)
                    .setSeed(3)
                    .optPrecision(Precision.FP32)
                    .build();
    private static final TrainingSettings FP16 = FP32.withPrecision(Precision.FP16);

    @Test
    void shouldTrainAsFloat32DoesWithinFloat16sPrecision() throws Exception {
        try (DjlAccelerator half = new DjlAccelerator(FP16);
                DjlAccelerator full = new DjlAccelerator(FP32)) {
            assertThat(half.precision()).isEqualTo(Precision.FP16);
            float[] start = flat(full.initializedState());
            assertThat(flat(half.initializedState())).isEqualTo(start);
            for (int k = 0; k < 3; k++) {
                Batch b = DjlAcceleratorTest.batch(k);
                double lossHalf = half.train(b).loss();
                double lossFull = full.train(b).loss();
                assertThat(Math.abs(lossHalf - lossFull)).isLessThan(2e-3 * lossFull);
            }
            // What the three updates moved, in float16 against float32: the same direction and
            // size within float16's precision, and far from no update at all.
            float[] moved16 = minus(flat(half.snapshot()), start);
            float[] moved32 = minus(flat(full.snapshot()), start);
            double norm = norm(moved32);
            assertThat(norm).isPositive();
            assertThat(norm(minus(moved16, moved32)) / norm).isLessThan(0.05);
            assertThat(half.lossScale()).hasValue(LossScaler.INITIAL_SCALE);
            assertThat(full.lossScale()).isEmpty();
        }
    }

    /**
     * A scale so large that the float16 gradient overflows: the step is skipped (the masters and
     * the momentum stay as they were, bit for bit; the global step still counts) and the scale
     * halves, as PyTorch's GradScaler does.
     */
    @Test
    void shouldSkipAStepWhoseGradientOverflowsAndHalveTheScale() throws Exception {
        byte[] before;
        try (DjlAccelerator a = new DjlAccelerator(FP16)) {
            a.train(DjlAcceleratorTest.batch(0));
            before = withLossScale(a.snapshot(), 1e30f);
        }
        try (DjlAccelerator b = new DjlAccelerator(FP16)) {
            b.restore(before);
            double loss = b.train(DjlAcceleratorTest.batch(1)).loss();
            assertThat(loss).as("the loss is computed unscaled").isFinite();
            byte[] after = b.snapshot();
            assertThat(b.step()).isEqualTo(2);
            assertThat(arrays(after)).isEqualTo(arrays(before));
            assertThat(lossScale(after)).containsExactly(0.5e30f, 0f);
            assertThat(b.lossScale()).hasValue(0.5e30f);
            // The next step with a scale that still overflows is skipped too; then it trains.
            b.train(DjlAcceleratorTest.batch(1));
            assertThat(arrays(b.snapshot())).isEqualTo(arrays(before));
        }
    }

    /** A run restored from a mixed-precision checkpoint goes on exactly as the run it saved. */
    @Test
    void shouldResumeFromACheckpointExactlyAsTheRunGoesOn() throws Exception {
        try (DjlAccelerator run = new DjlAccelerator(FP16);
                DjlAccelerator resumed = new DjlAccelerator(FP16)) {
            run.train(DjlAcceleratorTest.batch(0));
            byte[] checkpoint = run.snapshot();
            assertThat(lossScale(checkpoint)).containsExactly(LossScaler.INITIAL_SCALE, 1f);
            run.train(DjlAcceleratorTest.batch(1));
            resumed.restore(checkpoint);
            resumed.train(DjlAcceleratorTest.batch(1));
            assertThat(resumed.snapshot()).isEqualTo(run.snapshot());
        }
    }

    /** A run changes precision across a restore: the float32 state carries no loss scale. */
    @Test
    void shouldResumeAFloat32StateInFloat16AndAFloat16StateInFloat32() throws Exception {
        byte[] full;
        byte[] half;
        try (DjlAccelerator a = new DjlAccelerator(FP32);
                DjlAccelerator b = new DjlAccelerator(FP16)) {
            a.train(DjlAcceleratorTest.batch(0));
            b.train(DjlAcceleratorTest.batch(0));
            full = a.snapshot();
            half = b.snapshot();
        }
        try (DjlAccelerator halfFromFull = new DjlAccelerator(FP16);
                DjlAccelerator fullFromHalf = new DjlAccelerator(FP32)) {
            halfFromFull.restore(full);
            fullFromHalf.restore(half);
            halfFromFull.train(DjlAcceleratorTest.batch(1));
            fullFromHalf.train(DjlAcceleratorTest.batch(1));
            assertThat(halfFromFull.lossScale()).hasValue(LossScaler.INITIAL_SCALE);
            assertThat(halfFromFull.step()).isEqualTo(2);
            assertThat(fullFromHalf.step()).isEqualTo(2);
        }
        byte[] trailing = Arrays.copyOf(full, full.length + 12);
        try (DjlAccelerator a = new DjlAccelerator(FP16)) {
            a.restore(trailing);
            assertThatThrownBy(a::prepare).hasMessage("the checkpoint has bytes after its arrays");
        }
    }

    /** The saved model holds the trained float32 masters, not the parameters it started from. */
    @Test
    void shouldSaveTheMastersAsTheModel(@TempDir Path dir) throws Exception {
        try (DjlAccelerator a = new DjlAccelerator(FP16)) {
            byte[] start = a.initializedState();
            a.train(DjlAcceleratorTest.batch(0));
            a.finish(dir, 0);
            float[] trained = flat(a.snapshot());
            assertThat(trained).isNotEqualTo(flat(start));
            try (Model loaded = Model.newInstance("unet3d", Device.cpu())) {
                loaded.setBlock(Unet3d.builder().optWidth(FP16.width()).build());
                loaded.load(dir.resolve("model-device-0"), "unet3d");
                var saved = loaded.getBlock().getParameters();
                float[] weights = new float[trained.length / 2];
                int at = 0;
                for (int i = 0; i < saved.size(); i++) {
                    float[] values = saved.get(i).getValue().getArray().toFloatArray();
                    System.arraycopy(values, 0, weights, at, values.length);
                    at += values.length;
                }
                assertThat(weights).isEqualTo(weightsOf(a.snapshot()));
            }
        }
    }

    @Test
    void shouldTrainInFloat16OnGpusOnlyUnlessTold() {
        List<TrainingDevice> gpus = List.of(TrainingDevice.gpu(0), TrainingDevice.flinkGpu(1));
        List<TrainingDevice> mixed = List.of(TrainingDevice.gpu(0), TrainingDevice.cpu(0));
        assertThat(Precision.AUTO.forDevices(gpus)).isEqualTo(Precision.FP16);
        assertThat(Precision.AUTO.forDevices(mixed)).isEqualTo(Precision.FP32);
        assertThat(Precision.AUTO.forDevices(List.of())).isEqualTo(Precision.FP32);
        assertThat(Precision.FP32.forDevices(gpus)).isEqualTo(Precision.FP32);
        assertThat(Precision.FP16.forDevices(mixed)).isEqualTo(Precision.FP16);
        assertThat(Precision.AUTO.forDevice(true)).isEqualTo(Precision.FP16);
        assertThat(Precision.AUTO.forDevice(false)).isEqualTo(Precision.FP32);
        assertThat(new DjlAccelerator(FP32.withPrecision(Precision.AUTO)).precision())
                .isEqualTo(Precision.FP32);
        assertThat(Precision.parse("fp16")).isEqualTo(Precision.FP16);
        assertThatThrownBy(() -> Precision.parse("bf16"))
                .hasMessage("unknown precision 'bf16': expected auto, fp32 or fp16");
    }

    // The state's layout (DeviceParameters): magic, network name, step, count, then per array
    // its name, length, values and (trained) momentum; a mixed-precision state ends with a tag,
    // the loss scale and the steps since it changed.

    /** The state's bytes after its step and before any loss scale: the arrays. */
    static byte[] arrays(byte[] state) {
        int from = afterStep(state);
        return Arrays.copyOfRange(state, from, state.length - 12);
    }

    private static float[] lossScale(byte[] state) {
        ByteBuffer b = ByteBuffer.wrap(state, state.length - 8, 8);
        return new float[] {b.getFloat(), b.getFloat()};
    }

    private static byte[] withLossScale(byte[] state, float scale) {
        byte[] changed = state.clone();
        ByteBuffer.wrap(changed, changed.length - 8, 8).putFloat(scale).putFloat(0f);
        return changed;
    }

    private static int afterStep(byte[] state) {
        int nameLength = ByteBuffer.wrap(state, 4, 2).getShort() & 0xffff;
        return 4 + 2 + nameLength + 8;
    }

    /** Every value of the state's arrays (weights and momentum), in order. */
    private static float[] flat(byte[] state) {
        return values(state, true);
    }

    /** The trained weights alone, in order. */
    private static float[] weightsOf(byte[] state) {
        return values(state, false);
    }

    private static float[] values(byte[] state, boolean withMomentum) {
        ByteBuffer b = ByteBuffer.wrap(state);
        b.position(afterStep(state));
        int n = b.getInt();
        float[] out = new float[(state.length - b.position()) / 4];
        int at = 0;
        for (int i = 0; i < n; i++) {
            int nameLength = b.getShort() & 0xffff;
            String name = new String(state, b.position(), nameLength, StandardCharsets.UTF_8);
            b.position(b.position() + nameLength);
            int length = b.getInt();
            assertThat(name).isNotEmpty();
            for (int v = 0; v < length; v++) {
                out[at++] = b.getFloat();
            }
            // The 3D-UNet trains every array: momentum follows the values.
            for (int v = 0; v < length; v++) {
                float m = b.getFloat();
                if (withMomentum) {
                    out[at++] = m;
                }
            }
        }
        return Arrays.copyOf(out, at);
    }

    private static float[] minus(float[] a, float[] b) {
        float[] d = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i] - b[i];
        }
        return d;
    }

    private static double norm(float[] a) {
        double s = 0;
        for (float v : a) {
            s += (double) v * v;
        }
        return Math.sqrt(s);
    }
}
