package io.minato.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A range of a patch's serialized form, written without the rest: the same bytes, bit for bit. */
class PatchRangeTest {
    /** 3x5x7 voxels: 16 bytes of header, 420 of input, 105 of target. */
    private static final Shape3 SHAPE = new Shape3(3, 5, 7);

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5, 7, 64, 2048})
    void shouldWriteEachRangeAsTheSameBytesAsTheWholePatch(int pieceBytes) throws IOException {
        Patch patch = patch(11);
        byte[] whole = whole(patch);
        assertThat((long) whole.length).isEqualTo(patch.serializedBytes());
        DataOutputSerializer joined = new DataOutputSerializer(16);
        for (int from = 0; from < whole.length; from += pieceBytes) {
            int length = Math.min(pieceBytes, whole.length - from);
            DataOutputSerializer range = new DataOutputSerializer(16);
            patch.writeRange(range, from, length);
            assertThat(range.getCopyOfBuffer())
                    .as("bytes %d+%d", from, length)
                    .isEqualTo(Arrays.copyOfRange(whole, from, from + length));
            joined.write(range.getCopyOfBuffer());
        }
        assertThat(joined.getCopyOfBuffer()).isEqualTo(whole);
    }

    /** Ranges longer than FloatIo's chunk, starting and ending inside a value. */
    @Test
    void shouldWriteRangesLongerThanAChunk() throws IOException {
        Patch patch = patch(12, Shape3.cube(40)); // 250 KiB of input
        byte[] whole = whole(patch);
        for (int[] r : new int[][] {{0, whole.length}, {3, 100_001}, {70_003, 150_005}}) {
            DataOutputSerializer range = new DataOutputSerializer(16);
            patch.writeRange(range, r[0], r[1]);
            assertThat(range.getCopyOfBuffer())
                    .isEqualTo(Arrays.copyOfRange(whole, r[0], r[0] + r[1]));
        }
    }

    @Test
    void shouldRefuseARangeOutsideThePatch() {
        Patch patch = patch(13);
        long size = patch.serializedBytes();
        DataOutputSerializer out = new DataOutputSerializer(16);
        assertThatThrownBy(() -> patch.writeRange(out, size - 2, 3))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> patch.writeRange(out, -1, 1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static byte[] whole(Patch patch) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(16);
        patch.writeTo(out);
        return out.getCopyOfBuffer();
    }

    private static Patch patch(long seed) {
        return patch(seed, SHAPE);
    }

    private static Patch patch(long seed, Shape3 shape) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] image = new float[(int) shape.voxels()];
        byte[] label = new byte[image.length];
        for (int i = 0; i < image.length; i++) {
            image[i] = Float.intBitsToFloat(r.nextInt());
            label[i] = (byte) r.nextInt(256);
        }
        return new Patch(shape, image, label);
    }
}
