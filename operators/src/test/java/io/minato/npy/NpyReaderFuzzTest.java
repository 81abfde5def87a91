package io.minato.npy;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Any bytes at all as a {@code .npy} file: either a header and data the reader can map (never more
 * data than the file holds, every element readable) or one {@link NpyFormatException} line naming
 * the file; no other exception, no hang, no allocation beyond the file's size. With the suite the
 * seeds in {@code NpyReaderFuzzTestInputs} run; {@code JAZZER_FUZZ=1} fuzzes for {@code
 * maxDuration}; the standalone driver takes {@link #fuzzerTestOneInput} for long runs (README).
 */
class NpyReaderFuzzTest {
    private static final Path FILE = tempFile();

    @FuzzTest(maxDuration = "60s")
    void readsAnyBytesOrSaysWhyNotInOneLine(byte[] bytes) throws IOException {
        fuzzerTestOneInput(bytes);
    }

    /** The target, also for Jazzer's standalone driver ({@code --target_class}). */
    public static void fuzzerTestOneInput(byte[] bytes) throws IOException {
        Files.write(FILE, bytes);
        NpyArray array;
        try {
            NpyHeader header = NpyReader.readHeader(FILE);
            assertThat(header.dataOffset() + header.dataBytes()).isLessThanOrEqualTo(bytes.length);
            array = NpyReader.map(FILE);
        } catch (NpyFormatException e) {
            assertThat(e.getMessage()).startsWith(FILE.toString()).doesNotContain("\n");
            return;
        }
        long n = array.size();
        assertThat(n * array.dtype().size()).isEqualTo(array.header().dataBytes());
        if (n > 0) {
            array.getDouble(0);
            array.getDouble(n - 1);
        }
    }

    private static Path tempFile() {
        try {
            Path shm = Path.of("/dev/shm");
            Path file =
                    Files.isDirectory(shm) && Files.isWritable(shm)
                            ? Files.createTempFile(shm, "npy-fuzz", ".npy")
                            : Files.createTempFile("npy-fuzz", ".npy");
            file.toFile().deleteOnExit();
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
