package io.minato.trainer.serve;

import io.minato.sample.PreparedSample;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How a batch's bytes reach its training process: the inputs of every sample (float32, C order,
 * little-endian), then their targets (uint8 per voxel, or one little-endian int32 class each),
 * written once, either into a slot file in shared memory that the process maps (same host), or onto
 * the socket after the header (another host).
 */
final class BatchBytes {
    private BatchBytes() {}

    /** The header fields that describe the batch's arrays, as the client builds its tensors. */
    static Map<String, Object> layout(List<PreparedSample> samples) {
        if (PythonSampleBatch.holds(samples)) {
            return PythonSampleBatch.layout(samples);
        }
        Patch first = samples.get(0).patch();
        Shape3 s = first.shape();
        int n = samples.size();
        for (PreparedSample sample : samples) {
            if (!sample.patch().shape().equals(s)
                    || sample.patch().denseLabel() != first.denseLabel()) {
                throw new IllegalArgumentException("a batch mixes patch shapes");
            }
        }
        if (first.denseLabel()) {
            // A volume and its label: (B, 1, D, H, W) each, as MLPerf's 3D-UNet takes them.
            List<Long> shape = List.of((long) n, 1L, (long) s.d(), (long) s.h(), (long) s.w());
            return Map.of(
                    "image", Map.of("shape", shape, "dtype", "float32"),
                    "label", Map.of("shape", shape, "dtype", "uint8"),
                    "nbytes", bytes(samples));
        }
        // An image and its class: (B, C, H, W) and (B,).
        return Map.of(
                "image",
                Map.of(
                        "shape",
                        List.of((long) n, (long) s.d(), (long) s.h(), (long) s.w()),
                        "dtype",
                        "float32"),
                "label",
                Map.of("shape", List.of((long) n), "dtype", "int32"),
                "nbytes",
                bytes(samples));
    }

    static long bytes(List<PreparedSample> samples) {
        long n = 0;
        for (PreparedSample s : samples) {
            n += s.patch().bytes();
        }
        return n;
    }

    /** Writes the batch's bytes at {@code into}'s position. */
    static void put(List<PreparedSample> samples, ByteBuffer into) {
        ByteBuffer le = into.order(ByteOrder.LITTLE_ENDIAN);
        for (PreparedSample s : samples) {
            float[] image = s.patch().image();
            le.asFloatBuffer().put(image);
            le.position(le.position() + image.length * Float.BYTES);
        }
        for (PreparedSample s : samples) {
            le.put(s.patch().label());
        }
    }

    /**
     * The slot files of one connection in shared memory: slot {@code k} holds the batch sent k-th
     * modulo the slots, which the process copies out before it gives the credit back.
     */
    static final class Slots implements AutoCloseable {
        private final List<Path> files = new ArrayList<>();
        private final List<MappedByteBuffer> maps = new ArrayList<>();
        private final List<FileChannel> channels = new ArrayList<>();

        Slots(Path dir, String prefix, int count) throws IOException {
            try {
                for (int k = 0; k < count; k++) {
                    Path file = dir.resolve(prefix + "-" + k);
                    files.add(file);
                    channels.add(
                            FileChannel.open(
                                    file,
                                    StandardOpenOption.CREATE_NEW,
                                    StandardOpenOption.READ,
                                    StandardOpenOption.WRITE));
                    maps.add(null);
                }
            } catch (IOException e) {
                close();
                throw e;
            }
        }

        int count() {
            return files.size();
        }

        Path file(int slot) {
            return files.get(slot);
        }

        /** Writes the batch into {@code slot}, growing its file when the batch is larger. */
        void write(int slot, List<PreparedSample> samples) throws IOException {
            long bytes = bytes(samples);
            if (bytes == 0) {
                return; // samples in shared memory of their own (PythonSampleBatch)
            }
            MappedByteBuffer map = maps.get(slot);
            if (map == null || map.capacity() < bytes) {
                FileChannel ch = channels.get(slot);
                ch.truncate(0);
                ch.write(ByteBuffer.wrap(new byte[1]), bytes - 1); // sized, not filled
                map = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes);
                maps.set(slot, map);
            }
            map.clear();
            put(samples, map);
        }

        @Override
        public void close() {
            for (FileChannel ch : channels) {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // deleted below all the same
                }
            }
            for (Path f : files) {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException ignored) {
                    // /dev/shm is cleared at reboot
                }
            }
            maps.clear();
        }
    }
}
