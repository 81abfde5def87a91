package io.minato.npy;

import java.io.IOException;
import java.nio.file.Path;
import org.apache.flink.runtime.throwable.ThrowableAnnotation;
import org.apache.flink.runtime.throwable.ThrowableType;

/**
 * A {@code .npy} file that cannot be read; the message is one line: {@code <file>: <problem>[;
 * <what to do>]}. A job that meets one fails at once, without Flink's restarts, as on {@link
 * io.minato.data.BadInputException}.
 */
@ThrowableAnnotation(ThrowableType.NonRecoverableError)
public class NpyFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String file; // a Path does not serialize

    public NpyFormatException(Path file, String problem) {
        this(file, problem, null);
    }

    public NpyFormatException(Path file, String problem, String hint) {
        super(oneLine(file + ": " + problem + (hint == null ? "" : "; " + hint)));
        this.file = file.toString();
    }

    /** The file that was refused. */
    public Path file() {
        return Path.of(file);
    }

    /**
     * Escapes control characters so that paths and header excerpts can never break the message over
     * several log lines.
     */
    static String oneLine(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\n') {
                sb.append("\\n");
            } else if (c == '\r') {
                sb.append("\\r");
            } else if (c == '\t') {
                sb.append("\\t");
            } else if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
                sb.append(String.format("\\x%02x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
