package io.minato.npy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

/** Reads {@code .npy} files (format versions 1.0, 2.0 and 3.0) by memory-mapping their data. */
public final class NpyReader {

    static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};

    /** Magic, version, and the 4-byte header length of versions 2 and 3. */
    private static final int MAX_PREAMBLE = 12;

    /**
     * Real headers are a few hundred bytes; the cap keeps a damaged length field from allocating
     * gigabytes.
     */
    private static final int MAX_HEADER_BYTES = 1 << 20;

    private NpyReader() {}

    /** Reads and checks the header only: a few hundred bytes, whatever the file's size. */
    public static NpyHeader readHeader(Path file) throws IOException {
        try (FileChannel channel = open(file)) {
            return readHeader(file, channel);
        }
    }

    /** Maps the data read-only without copying it; the file may be closed or moved afterwards. */
    public static NpyArray map(Path file) throws IOException {
        try (FileChannel channel = open(file)) {
            NpyHeader header = readHeader(file, channel);
            if (header.dataBytes() > Integer.MAX_VALUE) {
                throw new NpyFormatException(
                        file,
                        "holds "
                                + header.dataBytes()
                                + " bytes of data; arrays over 2 GiB - 1 bytes are not supported"
                                + " yet",
                        "split the volume into smaller files");
            }
            MappedByteBuffer data =
                    channel.map(
                            FileChannel.MapMode.READ_ONLY, header.dataOffset(), header.dataBytes());
            // Closing the channel (on return) does not unmap: the mapping lives until GC.
            return new NpyArray(file, header, data);
        }
    }

    /**
     * Opens a regular file for reading. Anything else is refused before it is opened: opening a
     * named pipe (FIFO) blocks until some process writes to it, which hung a run forever.
     */
    private static FileChannel open(Path file) throws IOException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class); // follows symbolic links
        } catch (NoSuchFileException e) {
            throw new NpyFormatException(file, "no such file");
        }
        if (!a.isRegularFile() && !a.isDirectory()) { // a directory: refused below
            throw new NpyFormatException(
                    file, "not a regular file (a named pipe, socket or device); give a .npy file");
        }
        try {
            return FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new NpyFormatException(file, "no such file");
        }
    }

    private static NpyHeader readHeader(Path file, FileChannel channel) throws IOException {
        long size = channel.size();
        if (size == 0) {
            throw new NpyFormatException(
                    file, "empty file (0 bytes), not a .npy array", "was it written completely?");
        }
        ByteBuffer pre = ByteBuffer.allocate((int) Math.min(size, MAX_PREAMBLE));
        pre.order(ByteOrder.LITTLE_ENDIAN);
        readFully(file, channel, pre, 0);

        if (!startsWithMagic(pre)) {
            boolean zip = pre.limit() >= 2 && pre.get(0) == 'P' && pre.get(1) == 'K';
            throw new NpyFormatException(
                    file,
                    "not a .npy file: it starts with '"
                            + printable(pre)
                            + "' instead of the magic '\\x93NUMPY'",
                    zip ? "this looks like a zip; extract the arrays of an .npz first" : null);
        }
        if (pre.limit() < 8) {
            throw truncatedPreamble(file, size);
        }
        int major = pre.get(6) & 0xFF;
        int minor = pre.get(7) & 0xFF;
        if (major < 1 || major > 3 || minor != 0) {
            throw new NpyFormatException(
                    file,
                    "unsupported .npy format version " + major + "." + minor,
                    "this reader knows versions 1.0, 2.0 and 3.0");
        }
        int preamble = major == 1 ? 10 : 12;
        if (pre.limit() < preamble) {
            throw truncatedPreamble(file, size);
        }
        long headerLength = major == 1 ? pre.getShort(8) & 0xFFFF : pre.getInt(8) & 0xFFFFFFFFL;
        if (headerLength > size - preamble) {
            throw new NpyFormatException(
                    file,
                    "header length "
                            + headerLength
                            + " runs past the end of the file, which holds "
                            + size
                            + " bytes (truncated file?)");
        }
        if (headerLength > MAX_HEADER_BYTES) {
            throw new NpyFormatException(
                    file,
                    "header of "
                            + headerLength
                            + " bytes is larger than the "
                            + MAX_HEADER_BYTES
                            + " this reader accepts (damaged file?)");
        }

        ByteBuffer raw = ByteBuffer.allocate((int) headerLength);
        readFully(file, channel, raw, preamble);
        raw.flip();
        NpyHeaderParser.Dict dict = NpyHeaderParser.parse(file, decode(file, raw, major));

        String descr = dict.descr;
        DType dtype = descr.length() >= 2 ? DType.byCode(descr.substring(1)) : null;
        if (dtype == null || "<>=|".indexOf(descr.charAt(0)) < 0) {
            throw new NpyFormatException(
                    file,
                    "unsupported dtype '" + descr + "'",
                    "convert it with numpy to one of " + DType.supportedCodes());
        }
        // '=' and '|' mean the writer's native order; NumPy only writes them on little-endian
        // machines in practice, so they are read as little-endian.
        ByteOrder order =
                descr.charAt(0) == '>' && dtype.size() > 1
                        ? ByteOrder.BIG_ENDIAN
                        : ByteOrder.LITTLE_ENDIAN;

        long dataBytes = dataBytes(dict.shape, dtype);
        if (dataBytes < 0) {
            throw new NpyFormatException(
                    file,
                    "shape "
                            + NpyHeader.shapeString(dict.shape)
                            + " of '"
                            + descr
                            + "' needs more bytes than a long can count (elements x itemsize"
                            + " overflows)");
        }
        long dataOffset = preamble + headerLength;
        if (dataBytes > size - dataOffset) {
            throw new NpyFormatException(
                    file,
                    "header claims "
                            + dataBytes
                            + " bytes of data but the file holds "
                            + (size - dataOffset)
                            + " (truncated file?)");
        }
        return new NpyHeader(dtype, order, dict.fortranOrder, dict.shape, major, dataOffset);
    }

    /** The byte count of a non-negative shape, or -1 when it overflows a long. */
    static long dataBytes(long[] shape, DType dtype) {
        try {
            long count = 1;
            for (long d : shape) {
                count = Math.multiplyExact(count, d);
            }
            return Math.multiplyExact(count, (long) dtype.size());
        } catch (ArithmeticException e) {
            return -1;
        }
    }

    /** Versions 1 and 2 write the header in latin-1, version 3 in UTF-8. */
    private static String decode(Path file, ByteBuffer raw, int major) throws NpyFormatException {
        if (major < 3) {
            return StandardCharsets.ISO_8859_1.decode(raw).toString();
        }
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(raw)
                    .toString();
        } catch (CharacterCodingException e) {
            throw new NpyFormatException(file, "version 3.0 header is not valid UTF-8");
        }
    }

    private static boolean startsWithMagic(ByteBuffer pre) {
        if (pre.limit() < MAGIC.length) {
            return false;
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (pre.get(i) != MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    private static NpyFormatException truncatedPreamble(Path file, long size) {
        return new NpyFormatException(
                file,
                "file ends after " + size + " bytes, inside the .npy preamble (truncated file?)");
    }

    private static void readFully(Path file, FileChannel channel, ByteBuffer into, long position)
            throws IOException {
        try {
            while (into.hasRemaining()) {
                int n = channel.read(into, position + into.position());
                if (n < 0) {
                    throw new NpyFormatException(
                            file, "file ended while reading its header (truncated file?)");
                }
            }
        } catch (NpyFormatException e) {
            throw e;
        } catch (IOException e) {
            if (Files.isDirectory(file)) {
                throw new NpyFormatException(file, "is a directory, not a .npy file");
            }
            throw e;
        }
    }

    /** The first bytes with anything but printable ASCII escaped, for the bad-magic message. */
    private static String printable(ByteBuffer pre) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(pre.limit(), MAGIC.length); i++) {
            int b = pre.get(i) & 0xFF;
            sb.append(
                    b >= 0x20 && b < 0x7F && b != '\'' && b != '\\'
                            ? String.valueOf((char) b)
                            : String.format("\\x%02x", b));
        }
        return sb.toString();
    }
}
