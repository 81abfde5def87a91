package io.minato.data;

import java.nio.file.Path;
import org.apache.flink.runtime.throwable.ThrowableAnnotation;
import org.apache.flink.runtime.throwable.ThrowableType;

/**
 * A case the loader must not train on. The message is one line: the file, the problem and, where it
 * helps, what to do.
 *
 * <p>A job that meets one fails at once, without Flink's restarts ({@link
 * ThrowableType#NonRecoverableError}): a restore would prepare the same sample from the same bytes
 * and meet it again, and each attempt only delayed the error. Flink reads the annotation only off
 * an exception that it could serialize to the JobManager, so the file is kept as its name.
 */
@ThrowableAnnotation(ThrowableType.NonRecoverableError)
public class BadInputException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String file; // a Path does not serialize
    private final String problem;

    public BadInputException(Path file, String problem) {
        super(file + ": " + problem);
        this.file = file.toString();
        this.problem = problem;
    }

    public BadInputException(Path file, String problem, Throwable cause) {
        super(file + ": " + problem, cause);
        this.file = file.toString();
        this.problem = problem;
    }

    /** What is wrong with the file, without its name. */
    public String problem() {
        return problem;
    }

    /** The file at fault. */
    public Path file() {
        return Path.of(file);
    }
}
