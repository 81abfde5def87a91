package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SampleTask;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends one device's trace lines after each step. Its length at a checkpoint is the committed
 * length that a restore truncates back to.
 */
final class TraceWriter implements Closeable {

    private static final Logger LOG = LoggerFactory.getLogger(TraceWriter.class);

    private final Path file;
    private final int device;
    private final FileChannel channel;
    private final IntFunction<String> names;
    private long length;

    private TraceWriter(
            Path file, int device, FileChannel channel, long length, IntFunction<String> names) {
        this.file = file;
        this.device = device;
        this.channel = channel;
        this.length = length;
        this.names = names;
    }

    /**
     * Opens device {@code device}'s file in {@code dir}, cut to {@code committedLength} bytes: 0 on
     * a fresh start, the checkpoint's length on a restore. {@code names} gives the {@code case}
     * column of a sample index (the workload's {@link io.minato.spi.SampleSet#traceName}).
     */
    static TraceWriter open(Path dir, int device, long committedLength, IntFunction<String> names)
            throws IOException {
        Files.createDirectories(dir);
        Path file = TraceFiles.deviceFile(dir, device);
        FileChannel channel =
                FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        try {
            long size = channel.size();
            if (size < committedLength) {
                // Lines of checkpointed steps are gone (file removed or on another machine's
                // disk): training goes on, the trace is incomplete.
                LOG.warn(
                        "Trace file {} has {} bytes, less than the {} bytes committed by the"
                                + " checkpoint; its earlier lines are lost",
                        file,
                        size,
                        committedLength);
            }
            channel.truncate(committedLength);
            long end = channel.size();
            channel.position(end);
            return new TraceWriter(file, device, channel, end, names);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /**
     * Appends a line for each sample of {@code batch}, trained in this device's step {@code step},
     * which ran from {@code startMillis} to {@code endMillis} (wall clock).
     */
    void append(Batch batch, long step, long startMillis, long endMillis) throws IOException {
        StringBuilder lines = new StringBuilder(batch.samples().size() * 32);
        for (PreparedSample s : batch.samples()) {
            SampleTask t = s.task();
            lines.append(t.epoch())
                    .append(',')
                    .append(t.index())
                    .append(',')
                    .append(csv(names.apply(t.caseIndex())))
                    .append(',')
                    .append(device)
                    .append(',')
                    .append(step)
                    .append(',')
                    .append(s.path().csv())
                    .append(',')
                    .append(s.prepCpuNanos() / 1000)
                    .append(',')
                    .append(startMillis)
                    .append(',')
                    .append(endMillis)
                    .append('\n');
        }
        ByteBuffer bytes = ByteBuffer.wrap(lines.toString().getBytes(StandardCharsets.UTF_8));
        try {
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
            length = channel.position();
        } catch (IOException e) {
            // Java's message (say, "No space left on device") does not name the file.
            throw new IOException(file + ": " + e.getMessage(), e);
        }
    }

    /** A CSV field: quoted (RFC 4180) when it holds a comma, a quote or a line break. */
    static String csv(String field) {
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == ',' || c == '"' || c == '\n' || c == '\r') {
                return '"' + field.replace("\"", "\"\"") + '"';
            }
        }
        return field;
    }

    /** Bytes written so far. */
    long length() {
        return length;
    }

    Path file() {
        return file;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
