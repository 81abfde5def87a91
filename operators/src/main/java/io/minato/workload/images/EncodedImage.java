package io.minato.workload.images;

import io.minato.data.BadInputException;
import io.minato.stats.FetchClock;
import java.util.Objects;

/**
 * An opened image: its file and its encoded bytes (JPEG, PNG, ...), not yet decoded. The bytes are
 * read on first use, so a sample that resumes past its decode (on the slow path) does not read its
 * file again.
 */
public final class EncodedImage {
    private final ImageFile file;
    private byte[] bytes;

    /** The image of {@code file}, read when its bytes are first asked for. */
    public EncodedImage(ImageFile file) {
        this.file = Objects.requireNonNull(file, "file");
    }

    /** An image whose bytes are in hand. */
    public EncodedImage(ImageFile file, byte[] bytes) {
        this(file);
        this.bytes = Objects.requireNonNull(bytes, "bytes");
    }

    public ImageFile file() {
        return file;
    }

    /**
     * The encoded bytes, read whole on the first call: an image is small next to what decoding it
     * costs. An opened image belongs to the one worker preparing it.
     *
     * @throws BadInputException the file is gone or unreadable: one line naming it
     */
    public byte[] bytes() throws BadInputException {
        if (bytes == null) {
            try (var read = FetchClock.read()) {
                bytes = ImageFolder.readBytes(file);
            }
        }
        return bytes;
    }
}
