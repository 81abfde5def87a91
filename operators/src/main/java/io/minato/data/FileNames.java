package io.minato.data;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * File names as the JVM holds them. The JVM turns a file name's bytes into a {@code String} with
 * its file name encoding ({@code sun.jnu.encoding}), which follows the locale: ASCII under {@code
 * LC_ALL=C}, where a name like {@code café.jpg} cannot be written back. The launchers run the JVM
 * under a UTF-8 locale; these checks catch a JVM that was started without one, and names that are
 * not valid in the encoding at all, before a run depends on them.
 */
public final class FileNames {
    private FileNames() {}

    /** The encoding this JVM holds file names in. */
    public static Charset encoding() {
        String name = System.getProperty("sun.jnu.encoding");
        try {
            return name == null ? Charset.defaultCharset() : Charset.forName(name);
        } catch (IllegalArgumentException e) {
            return Charset.defaultCharset();
        }
    }

    /** Whether this JVM holds file names in UTF-8. */
    public static boolean utf8() {
        return encoding().equals(StandardCharsets.UTF_8);
    }

    /**
     * Checks that {@code file}, as listed from a folder, can be named again by its string (the
     * string is what travels to the workers).
     *
     * @throws BadInputException one line: run under a UTF-8 locale, or rename the file
     */
    public static void requireRepresentable(Path file) throws BadInputException {
        String name = file.toString();
        try {
            if (file.getFileSystem().getPath(name).equals(file)) {
                return;
            }
        } catch (InvalidPathException e) {
            // As below.
        }
        throw unrepresentable(file);
    }

    /** The one line for a file whose name this JVM cannot write back. */
    public static BadInputException unrepresentable(Path file) {
        if (!utf8()) {
            return new BadInputException(
                    file,
                    "the file name cannot be held in this JVM's file name encoding ("
                            + encoding()
                            + ", from the locale); run under a UTF-8 locale (LC_ALL=C.UTF-8)");
        }
        return new BadInputException(
                file, "the file name is not valid UTF-8; rename the file (convmv -t utf-8)");
    }

    /**
     * The path named by {@code path}, a string made from a listed file.
     *
     * @throws BadInputException this JVM cannot name it (a worker in another JVM than the one that
     *     listed the folder, started under a locale that is not UTF-8)
     */
    public static Path of(String path) throws BadInputException {
        try {
            return Path.of(path);
        } catch (InvalidPathException e) {
            throw new BadInputException(
                    Path.of(path.replaceAll("[^\\x20-\\x7e]", "?")),
                    "the file name cannot be held in this JVM's file name encoding ("
                            + encoding()
                            + ", from the locale); run this JVM under a UTF-8 locale"
                            + " (LC_ALL=C.UTF-8; on a cluster, in the environment that starts its"
                            + " TaskManagers)",
                    e);
        }
    }
}
