package io.minato.job.generate;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Writes one NumPy format 1.0 file chunk by chunk into {@code <file>.tmp} and moves it into place
 * only when every byte the header promises has been written.
 *
 * <p>A stand-in for {@code io.minato.npy.NpyWriter} (module operators), which the integrator swaps
 * in; kept to the two dtypes the generator needs.
 */
final class NpyFileWriter implements AutoCloseable {

    /** The element types of a KiTS19-like case. */
    enum DType {
        FLOAT32("<f4", 4),
        UINT8("|u1", 1);

        final String descr;
        final int itemSize;

        DType(String descr, int itemSize) {
            this.descr = descr;
            this.itemSize = itemSize;
        }
    }

    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    // NumPy aligns the data to 64 bytes so that a memory map of the array is aligned.
    private static final int ALIGNMENT = 64;

    private final Path target;
    private final Path tmp;
    private final FileChannel channel;
    private final long dataBytes;
    private long written;

    private NpyFileWriter(Path target, Path tmp, FileChannel channel, long dataBytes) {
        this.target = target;
        this.tmp = tmp;
        this.channel = channel;
        this.dataBytes = dataBytes;
    }

    /** Starts {@code target}; the data must follow in C order as little-endian bytes. */
    static NpyFileWriter open(Path target, DType dtype, long[] shape) throws IOException {
        long count = 1;
        for (long dim : shape) {
            if (dim < 0) {
                throw new IllegalArgumentException("negative dimension in shape of " + target);
            }
            count = Math.multiplyExact(count, dim);
        }
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        FileChannel channel =
                FileChannel.open(
                        tmp,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.TRUNCATE_EXISTING,
                        StandardOpenOption.WRITE);
        NpyFileWriter writer =
                new NpyFileWriter(target, tmp, channel, Math.multiplyExact(count, dtype.itemSize));
        try {
            writer.writeFully(header(dtype, shape));
        } catch (IOException | RuntimeException e) {
            writer.discard();
            throw e;
        }
        return writer;
    }

    /** Appends the remaining bytes of {@code chunk}. */
    void write(ByteBuffer chunk) throws IOException {
        if (written + chunk.remaining() > dataBytes) {
            throw new IOException(
                    target
                            + ": data longer than its header says ("
                            + (written + chunk.remaining())
                            + " > "
                            + dataBytes
                            + " bytes)");
        }
        written += chunk.remaining();
        writeFully(chunk);
    }

    /** Moves the file into place if it is complete; otherwise deletes it and says so. */
    @Override
    public void close() throws IOException {
        if (!channel.isOpen()) {
            return;
        }
        if (written != dataBytes) {
            discard();
            throw new IOException(
                    target + ": only " + written + " of " + dataBytes + " data bytes written");
        }
        try {
            channel.close();
            moveIntoPlace();
        } catch (IOException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
    }

    /** The preamble: magic, version 1.0, header length, and the padded header dict. */
    static ByteBuffer header(DType dtype, long[] shape) {
        StringBuilder dims = new StringBuilder();
        for (long dim : shape) {
            dims.append(dim).append(", ");
        }
        // A 1-tuple keeps its comma, "(5,)"; longer ones drop the last, "(1, 2, 3)".
        String tuple =
                shape.length == 1
                        ? "(" + shape[0] + ",)"
                        : "(" + dims.substring(0, Math.max(0, dims.length() - 2)) + ")";
        String dict =
                "{'descr': '"
                        + dtype.descr
                        + "', 'fortran_order': False, 'shape': "
                        + tuple
                        + ", }";
        int unpadded = MAGIC.length + 2 + 2 + dict.length() + 1;
        int padding = (ALIGNMENT - unpadded % ALIGNMENT) % ALIGNMENT;
        String text = dict + " ".repeat(padding) + "\n";
        if (text.length() > 0xFFFF) {
            throw new IllegalArgumentException("npy header too long for format 1.0");
        }
        ByteBuffer buffer = ByteBuffer.allocate(MAGIC.length + 4 + text.length());
        buffer.put(MAGIC).put((byte) 1).put((byte) 0);
        buffer.put((byte) (text.length() & 0xFF)).put((byte) (text.length() >>> 8));
        buffer.put(text.getBytes(StandardCharsets.US_ASCII));
        return buffer.flip();
    }

    private void writeFully(ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            channel.write(bytes);
        }
    }

    private void moveIntoPlace() throws IOException {
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private void discard() throws IOException {
        try {
            channel.close();
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
