package io.minato.sample.serde;

import io.minato.spi.FloatIo;
import java.io.IOException;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/** Moves raw bytes between Flink's data views a chunk at a time (floats: {@link FloatIo}). */
final class BulkIo {
    private static final int CHUNK_BYTES = FloatIo.CHUNK_BYTES;

    private BulkIo() {}

    /**
     * Copies {@code bytes} from in to out. Not {@code out.write(in, bytes)}: Flink's
     * DataOutputSerializer does not grow for that call and fails when its buffer is short.
     */
    static void copy(DataInputView in, DataOutputView out, long bytes) throws IOException {
        byte[] chunk = new byte[(int) Math.min(CHUNK_BYTES, bytes)];
        for (long left = bytes; left > 0; ) {
            int n = (int) Math.min(chunk.length, left);
            in.readFully(chunk, 0, n);
            out.write(chunk, 0, n);
            left -= n;
        }
    }
}
