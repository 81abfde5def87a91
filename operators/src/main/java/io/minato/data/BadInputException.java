package io.minato.data;

import java.nio.file.Path;

/**
 * A case the loader must not train on. The message is one line: the file, the problem and, where it
 * helps, what to do.
 */
public class BadInputException extends Exception {
    private final Path file;
    private final String problem;

    public BadInputException(Path file, String problem) {
        super(file + ": " + problem);
        this.file = file;
        this.problem = problem;
    }

    public BadInputException(Path file, String problem, Throwable cause) {
        super(file + ": " + problem, cause);
        this.file = file;
        this.problem = problem;
    }

    /** What is wrong with the file, without its name. */
    public String problem() {
        return problem;
    }

    /** The file at fault. */
    public Path file() {
        return file;
    }
}
