package io.minato.workload.images;

import java.io.Serializable;
import java.nio.file.Path;

/**
 * One image of a class folder: where it is, its name relative to the data folder ({@code
 * class/image.jpg}, '/'-separated: the trace's {@code case}) and its class index.
 */
public record ImageFile(String path, String name, int label) implements Serializable {

    public Path file() {
        return Path.of(path);
    }
}
