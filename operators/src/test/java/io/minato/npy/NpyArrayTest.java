package io.minato.npy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NpyArrayTest {

    @TempDir Path dir;

    private NpyArray int16(long... shape) throws IOException {
        Path file = dir.resolve("labels.npy");
        int count = 1;
        for (long d : shape) {
            count *= (int) d;
        }
        NpyWriter.write(file, DType.INT16, shape, ByteBuffer.allocate(count * 2));
        return NpyReader.map(file);
    }

    @Test
    void shouldRefuseATypedViewOfAnotherDtypeNamingTheFileAndTheRightView() throws IOException {
        NpyArray array = int16(2, 2);

        assertThatThrownBy(array::floats)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(
                        array.path() + ": holds '<i2' data, not f4; use shorts() or getDouble()");
        assertThatThrownBy(array::bytes).hasMessageContaining("not u1/i1/b1");
        assertThatThrownBy(array::ints).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(array::longs).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(array::doubles).isInstanceOf(IllegalStateException.class);
        assertThat(array.shorts().remaining()).isEqualTo(4);
    }

    @Test
    void shouldHandOutIndependentReadOnlyBuffers() throws IOException {
        NpyArray array = int16(3);
        ByteBuffer first = array.buffer();
        first.position(4);

        assertThat(first.isReadOnly()).isTrue();
        assertThat(array.buffer().position()).isZero();
        assertThatThrownBy(() -> first.put(0, (byte) 1))
                .isInstanceOf(ReadOnlyBufferException.class);
        assertThatThrownBy(() -> array.shorts().put(0, (short) 1))
                .isInstanceOf(ReadOnlyBufferException.class);
    }

    @Test
    void shouldRefuseIndicesOutsideTheShape() throws IOException {
        NpyArray array = int16(2, 3);

        assertThat(array.flatIndex(1, 2)).isEqualTo(5);
        assertThatThrownBy(() -> array.flatIndex(2, 0))
                .isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("labels.npy: index [2, 0] outside shape (2, 3)");
        assertThatThrownBy(() -> array.flatIndex(1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 indices given for an array of shape (2, 3)");
        assertThatThrownBy(() -> array.getDouble(6))
                .isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("labels.npy: index 6 outside 0..5");
        assertThatThrownBy(() -> array.getDouble(-1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void shouldConvertEveryHalfPrecisionValueExactly() {
        for (int bits = 0; bits <= 0xFFFF; bits++) {
            int exponent = (bits >>> 10) & 0x1F;
            int mantissa = bits & 0x3FF;
            double sign = (bits & 0x8000) != 0 ? -1 : 1;
            float actual = NpyArray.halfToFloat((short) bits);
            if (exponent == 0x1F) {
                assertThat(mantissa == 0 ? Float.isInfinite(actual) : Float.isNaN(actual))
                        .as("bits %04x", bits)
                        .isTrue();
                continue;
            }
            double expected =
                    exponent == 0
                            ? sign * Math.scalb(mantissa / 1024.0, -14)
                            : sign * Math.scalb(1 + mantissa / 1024.0, exponent - 15);
            assertThat((double) actual).as("bits %04x", bits).isEqualTo(expected);
            assertThat(Math.copySign(1.0, actual)).isEqualTo(sign);
        }
    }
}
