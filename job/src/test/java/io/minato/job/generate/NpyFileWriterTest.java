package io.minato.job.generate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NpyFileWriterTest {

    @TempDir Path dir;

    @Test
    void shouldWriteTheNumpyVersion1PreambleAlignedTo64Bytes() {
        ByteBuffer header =
                NpyFileWriter.header(NpyFileWriter.DType.FLOAT32, new long[] {1, 3, 4, 5});
        byte[] bytes = new byte[header.remaining()];
        header.get(bytes);
        String text = new String(bytes, 10, bytes.length - 10, StandardCharsets.US_ASCII);

        assertThat(bytes.length % 64).isZero();
        assertThat(bytes[6]).isEqualTo((byte) 1);
        assertThat(bytes[7]).isZero();
        assertThat((bytes[8] & 0xFF) | (bytes[9] & 0xFF) << 8).isEqualTo(bytes.length - 10);
        assertThat(text)
                .startsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 4, 5), }")
                .endsWith(" \n");
    }

    @Test
    void shouldWriteAOneTupleWithItsComma() {
        ByteBuffer header = NpyFileWriter.header(NpyFileWriter.DType.UINT8, new long[] {5});
        String text =
                new String(header.array(), 10, header.remaining() - 10, StandardCharsets.US_ASCII);

        assertThat(text).startsWith("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }");
    }

    @Test
    void shouldMoveACompleteFileIntoPlaceReplacingAnOldOne() throws IOException {
        Path file = dir.resolve("a.npy");
        Files.writeString(file, "old");

        try (NpyFileWriter writer =
                NpyFileWriter.open(file, NpyFileWriter.DType.UINT8, new long[] {1, 2, 3})) {
            writer.write(ByteBuffer.wrap(new byte[] {0, 1, 2}));
            writer.write(ByteBuffer.wrap(new byte[] {2, 1, 0}));
        }

        NpyTestFiles.Npy npy = NpyTestFiles.read(file);
        assertThat(npy.shape()).containsExactly(1, 2, 3);
        assertThat(npy.bytes()).containsExactly(0, 1, 2, 2, 1, 0);
        assertThat(dir.resolve("a.npy.tmp")).doesNotExist();
    }

    @Test
    void shouldLeaveNoFileWhenTheDataIsShort() throws IOException {
        Path file = dir.resolve("short.npy");
        NpyFileWriter writer =
                NpyFileWriter.open(file, NpyFileWriter.DType.FLOAT32, new long[] {1, 2});
        writer.write(ByteBuffer.allocate(4));

        assertThatThrownBy(writer::close)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("short.npy")
                .hasMessageContaining("4 of 8");
        assertThat(file).doesNotExist();
        assertThat(dir.resolve("short.npy.tmp")).doesNotExist();
    }

    @Test
    void shouldRefuseMoreDataThanTheHeaderPromises() throws IOException {
        Path file = dir.resolve("long.npy");
        try (NpyFileWriter writer =
                NpyFileWriter.open(file, NpyFileWriter.DType.UINT8, new long[] {2})) {
            assertThatThrownBy(() -> writer.write(ByteBuffer.allocate(3)))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("long.npy");
            writer.write(ByteBuffer.allocate(2));
        }

        assertThat(Files.size(file)).isEqualTo(NpyTestFiles.read(file).preamble() + 2);
    }
}
