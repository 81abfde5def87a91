package io.minato.npy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Writes little-endian, C-order {@code .npy} files as NumPy does, through a {@code .tmp} file that
 * is moved into place only once complete.
 */
public final class NpyWriter {

    /** NumPy pads magic + length + header to this, so that the data is aligned. */
    private static final int ALIGN = 64;

    private static final int VERSION_1_MAX_HEADER = 0xFFFF;
    private static final int CHUNK_BYTES = 1 << 20;

    private NpyWriter() {}

    public static void writeFloat32(Path file, long[] shape, float[] data) throws IOException {
        checkLength(file, DType.FLOAT32, shape, (long) data.length * Float.BYTES);
        try (Stream out = open(file, DType.FLOAT32, shape)) {
            ByteBuffer chunk =
                    ByteBuffer.allocate(
                                    (int) Math.min((long) data.length * Float.BYTES, CHUNK_BYTES))
                            .order(ByteOrder.LITTLE_ENDIAN);
            FloatBuffer floats = chunk.asFloatBuffer();
            for (int from = 0; from < data.length; ) {
                int n = Math.min(floats.capacity(), data.length - from);
                floats.clear();
                floats.put(data, from, n);
                chunk.clear().limit(n * Float.BYTES);
                out.write(chunk);
                from += n;
            }
        }
    }

    public static void writeUint8(Path file, long[] shape, byte[] data) throws IOException {
        write(file, DType.UINT8, shape, ByteBuffer.wrap(data));
    }

    /**
     * Writes the bytes between {@code data}'s position and limit, which must already be in
     * little-endian layout; {@code data} itself is not moved.
     */
    public static void write(Path file, DType dtype, long[] shape, ByteBuffer data)
            throws IOException {
        checkLength(file, dtype, shape, data.remaining());
        try (Stream out = open(file, dtype, shape)) {
            out.write(data.duplicate());
        }
    }

    /** Starts a file to be filled chunk by chunk, for volumes too large for one array. */
    public static Stream open(Path file, DType dtype, long[] shape) throws IOException {
        return new Stream(file, dtype, shape.clone(), checkShape(file, dtype, shape));
    }

    /** A {@code .npy} file being written; it appears under its name only on a complete close. */
    public static final class Stream implements AutoCloseable {
        private final Path file;
        private final Path tmp;
        private final DType dtype;
        private final long[] shape;
        private final long expected;
        private final FileChannel channel;
        private long written;
        private boolean closed;

        private Stream(Path file, DType dtype, long[] shape, long expected) throws IOException {
            this.file = file;
            this.tmp = file.resolveSibling(file.getFileName() + ".tmp");
            this.dtype = dtype;
            this.shape = shape;
            this.expected = expected;
            this.channel =
                    FileChannel.open(
                            tmp,
                            StandardOpenOption.CREATE,
                            StandardOpenOption.TRUNCATE_EXISTING,
                            StandardOpenOption.WRITE);
            try {
                writeFully(ByteBuffer.wrap(header(dtype, shape)));
            } catch (IOException | RuntimeException e) {
                channel.close();
                Files.deleteIfExists(tmp);
                throw e;
            }
        }

        /** Appends the chunk's remaining bytes (little-endian layout), consuming them. */
        public void write(ByteBuffer chunk) throws IOException {
            if (closed) {
                throw new IllegalStateException(oneLine(file + ": stream is already closed"));
            }
            if (chunk.remaining() > expected - written) {
                throw new IOException(
                        oneLine(
                                file
                                        + ": a chunk of "
                                        + chunk.remaining()
                                        + " bytes would take the data past the "
                                        + expected
                                        + " bytes that "
                                        + describe()
                                        + " holds"));
            }
            written += writeFully(chunk);
        }

        /**
         * Moves the file into place if exactly the shape's bytes were written; otherwise removes it
         * and throws, leaving any older file of that name untouched.
         */
        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            closed = true;
            try {
                channel.close();
            } catch (IOException e) {
                Files.deleteIfExists(tmp);
                throw e;
            }
            if (written != expected) {
                Files.deleteIfExists(tmp);
                throw new IOException(
                        oneLine(
                                file
                                        + ": "
                                        + written
                                        + " bytes of data were written but "
                                        + describe()
                                        + " needs "
                                        + expected
                                        + "; the file was not created"));
            }
            // No fsync: this guards against a crashed writer process, not against power loss.
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
        }

        private long writeFully(ByteBuffer buffer) throws IOException {
            long n = 0;
            while (buffer.hasRemaining()) {
                n += channel.write(buffer);
            }
            return n;
        }

        private String describe() {
            return "shape "
                    + NpyHeader.shapeString(shape)
                    + " of '"
                    + NpyHeader.descr(dtype, ByteOrder.LITTLE_ENDIAN)
                    + "'";
        }
    }

    /** Magic, version, length and the padded header dict, ready to be followed by the data. */
    static byte[] header(DType dtype, long[] shape) {
        String dict =
                "{'descr': '"
                        + NpyHeader.descr(dtype, ByteOrder.LITTLE_ENDIAN)
                        + "', 'fortran_order': False, 'shape': "
                        + NpyHeader.shapeString(shape)
                        + ", }";
        int version = 1;
        int preamble = 10;
        if (padded(preamble, dict) - preamble > VERSION_1_MAX_HEADER) {
            version = 2;
            preamble = 12;
        }
        int total = padded(preamble, dict);
        ByteBuffer out = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        out.put(NpyReader.MAGIC).put((byte) version).put((byte) 0);
        int headerLength = total - preamble;
        if (version == 1) {
            out.putShort((short) headerLength);
        } else {
            out.putInt(headerLength);
        }
        out.put(dict.getBytes(StandardCharsets.US_ASCII));
        while (out.remaining() > 1) {
            out.put((byte) ' ');
        }
        out.put((byte) '\n');
        return out.array();
    }

    /** The preamble plus the dict and its final '\n', rounded up to the alignment. */
    private static int padded(int preamble, String dict) {
        int unpadded = preamble + dict.length() + 1;
        return (unpadded + ALIGN - 1) / ALIGN * ALIGN;
    }

    private static long checkShape(Path file, DType dtype, long[] shape) {
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException(
                        oneLine(
                                file
                                        + ": negative dimension in shape "
                                        + NpyHeader.shapeString(shape)));
            }
        }
        long bytes = NpyReader.dataBytes(shape, dtype);
        if (bytes < 0) {
            throw new IllegalArgumentException(
                    oneLine(
                            file
                                    + ": shape "
                                    + NpyHeader.shapeString(shape)
                                    + " needs more bytes than a long can count"));
        }
        return bytes;
    }

    private static void checkLength(Path file, DType dtype, long[] shape, long given) {
        long expected = checkShape(file, dtype, shape);
        if (given != expected) {
            throw new IllegalArgumentException(
                    oneLine(
                            file
                                    + ": "
                                    + given
                                    + " bytes of "
                                    + dtype.code()
                                    + " data given but shape "
                                    + NpyHeader.shapeString(shape)
                                    + " needs "
                                    + expected));
        }
    }

    private static String oneLine(String message) {
        return NpyFormatException.oneLine(message);
    }
}
