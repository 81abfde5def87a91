package io.minato.npy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Headers the reader accepts beyond what NumPy writes, and every kind of file it refuses. */
class NpyReaderTest {

    @TempDir Path dir;

    /** Opening a FIFO for reading blocks until a writer comes: it hung a run forever. */
    @Test
    void shouldRefuseANamedPipeWithoutOpeningIt() throws Exception {
        Path fifo = dir.resolve("case_00000_x.npy");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
        assertThat(mkfifo.waitFor()).isZero();
        assertTimeoutPreemptively(
                java.time.Duration.ofSeconds(10),
                () -> {
                    assertThatThrownBy(() -> NpyReader.readHeader(fifo))
                            .isInstanceOf(NpyFormatException.class)
                            .hasMessage(
                                    fifo
                                            + ": not a regular file (a named pipe, socket or"
                                            + " device); give a .npy file");
                    assertThatThrownBy(() -> NpyReader.map(fifo))
                            .isInstanceOf(NpyFormatException.class);
                });
    }

    /** Magic, version, header length and the header text, then {@code dataBytes} zeros. */
    private Path npy(String name, int major, String header, int dataBytes) throws IOException {
        byte[] text =
                header.getBytes(major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        ByteBuffer len = ByteBuffer.allocate(major == 1 ? 2 : 4).order(ByteOrder.LITTLE_ENDIAN);
        if (major == 1) {
            len.putShort((short) text.length);
        } else {
            len.putInt(text.length);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(NpyReader.MAGIC);
        out.write(new byte[] {(byte) major, 0});
        out.write(len.array());
        out.write(text);
        out.write(new byte[dataBytes]);
        return raw(name, out.toByteArray());
    }

    private Path npy(String header, int dataBytes) throws IOException {
        return npy("case_00001_x.npy", 1, header, dataBytes);
    }

    private Path raw(String name, byte[] bytes) throws IOException {
        return Files.write(dir.resolve(name), bytes);
    }

    /** The refusal is one line, starts with the file and names the problem. */
    private static void assertRefused(Path file, String... problem) {
        assertThatThrownBy(() -> NpyReader.map(file))
                .isInstanceOf(NpyFormatException.class)
                .hasMessageStartingWith(file + ": ")
                .hasMessageContainingAll(problem)
                .hasMessageNotContaining("\n")
                .hasMessageNotContaining("\r")
                .satisfies(e -> assertThat(((NpyFormatException) e).file()).isEqualTo(file));
    }

    // --- accepted -------------------------------------------------------------------------

    @Test
    void shouldAcceptKeysInAnyOrderWithDoubleQuotesAndNoTrailingComma() throws IOException {
        String dict = "{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<i2\"}";
        Path file = npy(dict, 12);

        NpyHeader header = NpyReader.readHeader(file);

        assertThat(header.dtype()).isEqualTo(DType.INT16);
        assertThat(header.shape()).containsExactly(2, 3);
        assertThat(header.dataOffset()).isEqualTo(10 + dict.length());
    }

    @Test
    void shouldAcceptCompactAndPaddedWhitespaceAndPython2LongDimensions() throws IOException {
        Path compact = npy("{'descr':'<f8','fortran_order':True,'shape':(3L,2L),}", 48);
        Path padded =
                npy(
                        "padded.npy",
                        1,
                        "  {  'descr' : '<f8' ,\t'fortran_order' : False , 'shape' : ( ) }  \n",
                        8);

        assertThat(NpyReader.readHeader(compact).shape()).containsExactly(3, 2);
        assertThat(NpyReader.readHeader(compact).fortranOrder()).isTrue();
        assertThat(NpyReader.readHeader(padded).shape()).isEmpty();
    }

    @Test
    void shouldReadNativeAndUnspecifiedByteOrderAsLittleEndian() throws IOException {
        Path nativeOrder = npy("{'descr': '=u4', 'fortran_order': False, 'shape': (1,), }\n", 4);
        Path oneByte =
                npy(
                        "one_byte.npy",
                        1,
                        "{'descr': '<u1', 'fortran_order': False, 'shape': (1,)}",
                        1);

        assertThat(NpyReader.readHeader(nativeOrder).order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        assertThat(NpyReader.readHeader(oneByte).descr()).isEqualTo("|u1");
    }

    @Test
    void shouldReadTheHeaderOfAVolumeTooLargeToMap() throws IOException {
        Path file = hugeSparseFile();

        assertThat(NpyReader.readHeader(file).dataBytes()).isEqualTo(3L << 30);
    }

    // --- refused: the preamble --------------------------------------------------------------

    @Test
    void shouldRefuseAMissingFile() {
        assertRefused(dir.resolve("nowhere.npy"), "no such file");
    }

    @Test
    void shouldRefuseAnEmptyFile() throws IOException {
        assertRefused(raw("empty.npy", new byte[0]), "empty file (0 bytes)");
    }

    @Test
    void shouldRefuseAFileWithoutTheMagic() throws IOException {
        Path file =
                raw(
                        "bad_magic.npy",
                        "NUMPX\u0001\u0000v\u0000{}".getBytes(StandardCharsets.ISO_8859_1));

        assertRefused(file, "not a .npy file", "starts with 'NUMPX\\x01'", "magic");
    }

    @Test
    void shouldSuggestExtractingWhenGivenAnNpzArchive() throws IOException {
        Path file = raw("arrays.npz", new byte[] {'P', 'K', 3, 4, 20, 0, 0, 0});

        assertRefused(file, "not a .npy file", "extract the arrays of an .npz");
    }

    @Test
    void shouldRefuseAFileThatEndsInsideThePreamble() throws IOException {
        Path file = raw("stub.npy", new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 1});

        assertRefused(file, "file ends after 9 bytes, inside the .npy preamble");
    }

    @Test
    void shouldRefuseAnUnknownFormatVersion() throws IOException {
        Path file =
                npy("v9.npy", 9, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 4);

        assertRefused(file, "unsupported .npy format version 9.0", "1.0, 2.0 and 3.0");
    }

    @Test
    void shouldRefuseAHeaderLengthPastTheEndOfTheFile() throws IOException {
        byte[] bytes = Files.readAllBytes(npy("{'descr': '<f4', 'fortran_order'", 0));
        bytes[8] = (byte) 200;

        assertRefused(raw("cut.npy", bytes), "header length 200 runs past the end of the file");
    }

    @Test
    void shouldRefuseAVersion3HeaderThatIsNotUtf8() throws IOException {
        byte[] bytes = Files.readAllBytes(npy("v3.npy", 3, "{'descr': '<f4'\u00e9", 0));
        bytes[bytes.length - 1] = (byte) 0xFF;

        assertRefused(raw("v3.npy", bytes), "not valid UTF-8");
    }

    // --- refused: the dict ----------------------------------------------------------------

    @Test
    void shouldRefuseHeaderClaimingMoreBytesThanTheFileHolds() throws IOException {
        Path file =
                npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 8), }\n", 1024);

        assertRefused(
                file,
                "case_00001_x.npy: header claims 33554432 bytes of data but the file holds 1024"
                        + " (truncated file?)");
        assertThatThrownBy(() -> NpyReader.readHeader(file)).hasMessageContaining("truncated");
    }

    @ParameterizedTest
    @ValueSource(strings = {"<c8", "<U4", "|O", "<M8[ns]", "float32", "f4", "<f3", "", "<"})
    void shouldRefuseAnUnsupportedDtype(String descr) throws IOException {
        Path file =
                npy("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }\n", 16);

        assertRefused(file, "unsupported dtype '" + descr + "'", "b1, i1, u1");
    }

    @Test
    void shouldRefuseAStructuredDtype() throws IOException {
        Path file =
                npy(
                        "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape':"
                                + " (2,), }\n",
                        16);

        assertRefused(file, "unsupported dtype [('a', '<f4'), ('b', '<i4')] (a structured dtype)");
    }

    @Test
    void shouldRefuseANegativeDimension() throws IOException {
        Path file = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }\n", 12);

        assertRefused(file, "negative dimension -1 in shape (-1, 3)");
    }

    @Test
    void shouldRefuseAShapeWhoseByteCountOverflowsALong() throws IOException {
        Path elements =
                npy(
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }\n",
                        0);
        Path bytes =
                npy(
                        "bytes.npy",
                        1,
                        "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 2097152), }\n",
                        0);
        Path dimension =
                npy(
                        "dim.npy",
                        1,
                        "{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
                        0);

        assertRefused(elements, "shape (1099511627776, 1099511627776) of '<f4'", "overflows");
        assertRefused(bytes, "shape (1099511627776, 2097152) of '<f8'", "overflows");
        assertRefused(
                dimension, "dimension 99999999999999999999 in 'shape' does not fit in a long");
    }

    @Test
    void shouldRefuseAnExtraKey() throws IOException {
        Path file = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}\n", 4);

        assertRefused(file, "unexpected key 'extra'", "exactly the keys 'descr', 'fortran_order'");
    }

    @Test
    void shouldRefuseAMissingKey() throws IOException {
        Path file = npy("{'descr': '<f4', 'fortran_order': False}\n", 4);

        assertRefused(file, "header misses the key 'shape'");
    }

    @Test
    void shouldRefuseADuplicateKey() throws IOException {
        Path file =
                npy("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}\n", 8);

        assertRefused(file, "duplicate key 'descr'");
    }

    @Test
    void shouldRefuseCodeInTheHeaderWithoutRunningIt() throws IOException {
        Path bait = dir.resolve("pwned");
        Path file =
                npy(
                        "{'descr': __import__('os').system('touch "
                                + bait
                                + "'), 'fortran_order': False, 'shape': (1,), }\n",
                        4);

        assertRefused(
                file,
                "malformed header dict at character 10",
                "expected a quoted string for 'descr', found '__import__('os')");
        assertThat(bait).doesNotExist();
    }

    @Test
    void shouldRefuseAFortranOrderThatIsNotTrueOrFalse() throws IOException {
        Path file = npy("{'descr': '<f4', 'fortran_order': 'yes', 'shape': (1,)}\n", 4);
        Path number = npy("one.npy", 1, "{'descr': '<f4', 'fortran_order': 1, 'shape': (1,)}\n", 4);
        Path prefix =
                npy("p.npy", 1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}\n", 4);

        assertRefused(file, "expected True or False for 'fortran_order'");
        assertRefused(number, "expected True or False");
        assertRefused(prefix, "expected True or False");
    }

    @Test
    void shouldRefuseAShapeThatIsNotATupleOfIntegers() throws IOException {
        Path parenthesised = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (5)}\n", 20);
        Path list =
                npy("list.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [5]}\n", 20);
        Path fraction =
                npy("f.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}\n", 20);

        assertRefused(parenthesised, "shape (5) is not a tuple", "(n,)");
        assertRefused(list, "malformed header dict", "expected '('");
        assertRefused(fraction, "malformed header dict", "expected ',' or ')' in 'shape'");
    }

    @Test
    void shouldRefuseTextAfterTheDictAndHeadersThatAreNotADict() throws IOException {
        Path trailing = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} + 1\n", 4);
        Path notDict = npy("nd.npy", 1, "hello\n", 4);
        Path unterminated = npy("u.npy", 1, "{'descr': '<f4, 'fortran_order': False\n", 4);

        assertRefused(trailing, "unexpected text after the closing '}'", "found '+ 1'");
        assertRefused(notDict, "expected '{'");
        assertRefused(unterminated, "malformed header dict");
    }

    @Test
    void shouldKeepTheMessageOnOneLineWhenTheHeaderHoldsLineBreaks() throws IOException {
        Path file =
                npy("{'descr': '<f4',\n 'fortran_order': False,\r\n 'shape': (1,)}\n+\r\n1\n", 4);

        assertRefused(file, "unexpected text after the closing '}'", "found '+\\r\\n1'");
    }

    @Test
    void shouldRefuseToMapDataOverTwoGibibytesForNow() throws IOException {
        assertRefused(hugeSparseFile(), "3221225472 bytes", "not supported yet");
    }

    @Test
    void shouldRefuseADirectory() {
        assertRefused(dir, "is a directory");
    }

    /** A header claiming 3 GiB and a sparse file that long, so nothing is written to disk. */
    private Path hugeSparseFile() throws IOException {
        Path file =
                npy(
                        "huge.npy",
                        1,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (805306368,), }\n",
                        0);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(f.length() + (3L << 30));
        }
        return file;
    }
}
