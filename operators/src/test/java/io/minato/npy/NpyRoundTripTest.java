package io.minato.npy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class NpyRoundTripTest {

    @TempDir Path dir;

    static Stream<Arguments> everyDtypeAndShape() {
        long[][] shapes = {{}, {0}, {1, 5, 6, 7}, {3, 0, 2}};
        return Arrays.stream(DType.values())
                .flatMap(t -> Arrays.stream(shapes).map(s -> Arguments.of(t, s)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("everyDtypeAndShape")
    void shouldReadBackTheBytesWrittenForEveryDtypeAndShape(DType dtype, long[] shape)
            throws IOException {
        Path file = dir.resolve(dtype + ".npy");
        long count = Arrays.stream(shape).reduce(1, Math::multiplyExact);
        byte[] bytes = new byte[(int) count * dtype.size()];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = dtype == DType.BOOL ? (byte) (i % 2) : (byte) (i * 31 + 7);
        }

        NpyWriter.write(file, dtype, shape, ByteBuffer.wrap(bytes));
        NpyArray array = NpyReader.map(file);

        assertThat(array.dtype()).isEqualTo(dtype);
        assertThat(array.shape()).containsExactly(shape);
        assertThat(array.size()).isEqualTo(count);
        assertThat(array.header().fortranOrder()).isFalse();
        assertThat(array.header().version()).isEqualTo(1);
        assertThat(array.buffer().order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        assertThat(array.buffer()).isEqualTo(ByteBuffer.wrap(bytes));
        assertThat(Files.size(file)).isEqualTo(array.header().dataOffset() + bytes.length);
    }

    @Test
    void shouldRoundTripFloat32ValuesIncludingSpecials() throws IOException {
        Path file = dir.resolve("x.npy");
        float[] data = new float[2 * 3 * 4];
        for (int i = 0; i < data.length; i++) {
            data[i] = i * 0.25f - 1;
        }
        data[5] = Float.NaN;
        data[6] = Float.NEGATIVE_INFINITY;
        data[7] = -0.0f;

        NpyWriter.writeFloat32(file, new long[] {2, 3, 4}, data);
        NpyArray array = NpyReader.map(file);

        float[] back = new float[data.length];
        array.floats().get(back);
        assertThat(back).containsExactly(data);
        assertThat(Float.floatToRawIntBits(back[7])).isEqualTo(Float.floatToRawIntBits(-0.0f));
        assertThat(array.getDouble(array.flatIndex(1, 2, 3))).isEqualTo(data[23]);
    }

    @Test
    void shouldRoundTripFloat32LargerThanOneWriteChunk() throws IOException {
        Path file = dir.resolve("big.npy");
        float[] data = new float[(1 << 18) * 3 + 17];
        for (int i = 0; i < data.length; i++) {
            data[i] = i;
        }

        NpyWriter.writeFloat32(file, new long[] {data.length}, data);
        float[] back = new float[data.length];
        NpyReader.map(file).floats().get(back);

        // isEqualTo compares with Arrays.equals; containsExactly is quadratic on large arrays.
        assertThat(back).isEqualTo(data);
    }

    @Test
    void shouldReadUint8ValuesAbove127AsUnsigned() throws IOException {
        Path file = dir.resolve("mask.npy");
        byte[] data = {0, 1, 127, (byte) 128, (byte) 200, (byte) 255};

        NpyWriter.writeUint8(file, new long[] {2, 3}, data);
        NpyArray array = NpyReader.map(file);

        assertThat(array.dtype()).isEqualTo(DType.UINT8);
        assertThat(array.header().descr()).isEqualTo("|u1");
        assertThat(array.getDouble(3)).isEqualTo(128);
        assertThat(array.getDouble(array.flatIndex(1, 2))).isEqualTo(255);
        byte[] back = new byte[data.length];
        array.bytes().get(back);
        assertThat(back).containsExactly(data);
    }

    @Test
    void shouldPadTheHeaderToSixtyFourBytesEndingInNewlineAsNumpyDoes() throws IOException {
        for (long[] shape : new long[][] {{}, {5}, {1, 2, 3}, {123456789, 0, 987654321, 4}}) {
            Path file = dir.resolve("padded.npy");
            long bytes = NpyReader.dataBytes(shape, DType.FLOAT32);
            NpyWriter.write(file, DType.FLOAT32, shape, ByteBuffer.allocate((int) bytes));
            NpyHeader header = NpyReader.readHeader(file);
            byte[] head = Arrays.copyOf(Files.readAllBytes(file), (int) header.dataOffset());

            assertThat(header.dataOffset() % 64).isZero();
            assertThat(head[head.length - 1]).isEqualTo((byte) '\n');
            assertThat(new String(head, 10, head.length - 10, StandardCharsets.US_ASCII))
                    .startsWith("{'descr': '<f4', 'fortran_order': False, 'shape': ");
        }
    }

    @Test
    void shouldSwitchToVersion2WhenTheHeaderDoesNotFitVersion1() throws IOException {
        Path file = dir.resolve("many_dims.npy");
        long[] shape = new long[30_000];
        Arrays.fill(shape, 1);

        NpyWriter.write(file, DType.INT16, shape, ByteBuffer.wrap(new byte[] {7, 1}));
        NpyArray array = NpyReader.map(file);

        assertThat(array.header().version()).isEqualTo(2);
        assertThat(array.header().dataOffset() % 64).isZero();
        assertThat(array.shape()).hasSize(30_000);
        assertThat(array.shorts().get(0)).isEqualTo((short) 0x0107);
    }

    @Test
    void shouldStreamChunksIntoOneFileAndMoveItIntoPlaceOnClose() throws IOException {
        Path file = dir.resolve("volume.npy");
        try (NpyWriter.Stream out = NpyWriter.open(file, DType.INT32, new long[] {4, 3})) {
            for (int row = 0; row < 4; row++) {
                ByteBuffer chunk = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
                chunk.putInt(row).putInt(row * 10).putInt(-row).flip();
                out.write(chunk);
            }
            assertThat(file).doesNotExist();
            assertThat(dir.resolve("volume.npy.tmp")).exists();
        }

        NpyArray array = NpyReader.map(file);
        assertThat(array.getDouble(array.flatIndex(3, 1))).isEqualTo(30);
        assertThat(array.getDouble(array.flatIndex(2, 2))).isEqualTo(-2);
        assertThat(dir.resolve("volume.npy.tmp")).doesNotExist();
    }

    @Test
    void shouldRefuseToCloseAShortStreamAndKeepTheOldFile() throws IOException {
        Path file = dir.resolve("volume.npy");
        NpyWriter.writeUint8(file, new long[] {1}, new byte[] {42});
        NpyWriter.Stream out = NpyWriter.open(file, DType.FLOAT32, new long[] {10});
        out.write(ByteBuffer.allocate(12));

        assertThatThrownBy(out::close)
                .isInstanceOf(IOException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("12 bytes of data were written but shape (10,) of '<f4'")
                .hasMessageContaining("needs 40")
                .hasMessageNotContaining("\n");
        assertThat(NpyReader.map(file).getDouble(0)).isEqualTo(42);
        assertThat(dir.resolve("volume.npy.tmp")).doesNotExist();
    }

    @Test
    void shouldRefuseAChunkThatRunsPastTheShape() throws IOException {
        Path file = dir.resolve("volume.npy");
        NpyWriter.Stream out = NpyWriter.open(file, DType.UINT16, new long[] {2});

        assertThatThrownBy(() -> out.write(ByteBuffer.allocate(6)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("past the 4 bytes");
        assertThatThrownBy(out::close).isInstanceOf(IOException.class);
        assertThat(file).doesNotExist();
    }

    @Test
    void shouldRefuseDataWhoseLengthDoesNotMatchTheShape() {
        Path file = dir.resolve("x.npy");

        assertThatThrownBy(() -> NpyWriter.writeFloat32(file, new long[] {2, 3}, new float[5]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("20 bytes of f4 data given but shape (2, 3) needs 24");
        assertThatThrownBy(() -> NpyWriter.writeUint8(file, new long[] {4}, new byte[3]))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(
                        () ->
                                NpyWriter.write(
                                        file, DType.INT64, new long[] {1}, ByteBuffer.allocate(4)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> NpyWriter.open(file, DType.INT8, new long[] {-1}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative dimension");
        assertThat(file).doesNotExist();
        assertThat(dir.resolve("x.npy.tmp")).doesNotExist();
    }

    @Test
    void shouldLeaveTheCallersBufferWhereItWas() throws IOException {
        ByteBuffer data = ByteBuffer.wrap(new byte[] {9, 1, 2, 3, 4});
        data.position(1);

        NpyWriter.write(dir.resolve("x.npy"), DType.UINT8, new long[] {4}, data);

        assertThat(data.position()).isEqualTo(1);
        assertThat(NpyReader.map(dir.resolve("x.npy")).getDouble(0)).isEqualTo(1);
    }
}
