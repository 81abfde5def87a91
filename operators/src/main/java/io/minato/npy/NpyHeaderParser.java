package io.minato.npy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Parses the header dict of a {@code .npy} file with a small strict grammar instead of evaluating
 * it as Python, so a crafted header can only be refused, never run.
 */
final class NpyHeaderParser {

    /** What the dict says, before the descr is interpreted. */
    static final class Dict {
        final String descr;
        final boolean fortranOrder;
        final long[] shape;

        Dict(String descr, boolean fortranOrder, long[] shape) {
            this.descr = descr;
            this.fortranOrder = fortranOrder;
            this.shape = shape;
        }
    }

    private static final String KEYS_HINT =
            "a .npy header holds exactly the keys 'descr', 'fortran_order' and 'shape'";
    private static final int EXCERPT_CHARS = 80;

    private final Path file;
    private final String s;
    private int pos;

    private NpyHeaderParser(Path file, String header) {
        this.file = file;
        this.s = header;
    }

    static Dict parse(Path file, String header) throws NpyFormatException {
        return new NpyHeaderParser(file, header).dict();
    }

    private Dict dict() throws NpyFormatException {
        String descr = null;
        Boolean fortranOrder = null;
        long[] shape = null;
        skipSpace();
        expect('{');
        while (true) {
            skipSpace();
            if (peek() == '}') {
                break;
            }
            String key = string("a quoted key");
            skipSpace();
            expect(':');
            skipSpace();
            switch (key) {
                case "descr":
                    checkFirst(key, descr);
                    descr = descrValue();
                    break;
                case "fortran_order":
                    checkFirst(key, fortranOrder);
                    fortranOrder = bool();
                    break;
                case "shape":
                    checkFirst(key, shape);
                    shape = tuple();
                    break;
                default:
                    throw new NpyFormatException(
                            file, "unexpected key '" + key + "' in the header", KEYS_HINT);
            }
            skipSpace();
            if (peek() == ',') {
                pos++;
            } else if (peek() != '}') {
                throw malformed("expected ',' or '}' after the value of '" + key + "'");
            }
        }
        pos++;
        skipSpace();
        if (pos != s.length()) {
            throw malformed("unexpected text after the closing '}'");
        }
        checkPresent("descr", descr);
        checkPresent("fortran_order", fortranOrder);
        checkPresent("shape", shape);
        return new Dict(descr, fortranOrder, shape);
    }

    private String descrValue() throws NpyFormatException {
        if (peek() == '[') {
            throw new NpyFormatException(
                    file,
                    "unsupported dtype " + bracketed() + " (a structured dtype)",
                    "save each field as its own plain .npy array");
        }
        return string("a quoted string for 'descr'");
    }

    private boolean bool() throws NpyFormatException {
        if (word("True")) {
            return true;
        }
        if (word("False")) {
            return false;
        }
        throw malformed("expected True or False for 'fortran_order'");
    }

    private long[] tuple() throws NpyFormatException {
        int start = pos;
        expect('(');
        List<Long> dims = new ArrayList<>();
        boolean trailingComma = false;
        while (true) {
            skipSpace();
            if (peek() == ')') {
                break;
            }
            dims.add(integer());
            skipSpace();
            trailingComma = peek() == ',';
            if (trailingComma) {
                pos++;
            } else if (peek() != ')') {
                throw malformed("expected ',' or ')' in 'shape'");
            }
        }
        pos++;
        String text = s.substring(start, pos);
        if (dims.size() == 1 && !trailingComma) {
            throw new NpyFormatException(
                    file,
                    "shape " + text + " is not a tuple",
                    "a one-dimensional shape is written (n,)");
        }
        long[] shape = new long[dims.size()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = dims.get(i);
            if (shape[i] < 0) {
                throw new NpyFormatException(
                        file, "negative dimension " + shape[i] + " in shape " + text);
            }
        }
        return shape;
    }

    private long integer() throws NpyFormatException {
        int start = pos;
        if (peek() == '-') {
            pos++;
        }
        int digits = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
            pos++;
        }
        if (pos == digits) {
            throw malformed("expected an integer in 'shape'");
        }
        String number = s.substring(start, pos);
        // Python 2 NumPy wrote long dimensions as 3L; NumPy itself still reads them.
        if (peek() == 'L' || peek() == 'l') {
            pos++;
        }
        try {
            return Long.parseLong(number);
        } catch (NumberFormatException e) {
            throw new NpyFormatException(
                    file, "dimension " + number + " in 'shape' does not fit in a long");
        }
    }

    private String string(String what) throws NpyFormatException {
        char quote = peek();
        if (quote != '\'' && quote != '"') {
            throw malformed("expected " + what);
        }
        int start = ++pos;
        while (pos < s.length() && s.charAt(pos) != quote) {
            char c = s.charAt(pos);
            if (c == '\\' || c == '\n') {
                throw malformed("escapes and line breaks inside strings are not supported");
            }
            pos++;
        }
        if (pos == s.length()) {
            throw malformed("unterminated string");
        }
        return s.substring(start, pos++);
    }

    /** Consumes an identifier-like word only when it is not the prefix of a longer one. */
    private boolean word(String w) {
        int end = pos + w.length();
        if (!s.startsWith(w, pos)
                || (end < s.length()
                        && (Character.isLetterOrDigit(s.charAt(end)) || s.charAt(end) == '_'))) {
            return false;
        }
        pos = end;
        return true;
    }

    private void checkFirst(String key, Object seen) throws NpyFormatException {
        if (seen != null) {
            throw new NpyFormatException(
                    file, "duplicate key '" + key + "' in the header", KEYS_HINT);
        }
    }

    private void checkPresent(String key, Object value) throws NpyFormatException {
        if (value == null) {
            throw new NpyFormatException(file, "header misses the key '" + key + "'", KEYS_HINT);
        }
    }

    private void expect(char c) throws NpyFormatException {
        if (peek() != c) {
            throw malformed("expected '" + c + "'");
        }
        pos++;
    }

    /** NumPy pads with spaces and ends with '\n'; tabs and '\r' are tolerated as Python does. */
    private void skipSpace() {
        while (pos < s.length()) {
            char c = s.charAt(pos);
            if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private char peek() {
        return pos < s.length() ? s.charAt(pos) : '\0';
    }

    private NpyFormatException malformed(String what) {
        return new NpyFormatException(
                file,
                "malformed header dict at character "
                        + pos
                        + ": "
                        + what
                        + ", found "
                        + excerpt(pos),
                "the header must be a plain dict literal as numpy.save writes it");
    }

    /** The list descr from '[' to its matching ']', shortened for the message. */
    private String bracketed() {
        int depth = 0;
        int end = pos;
        while (end < s.length()) {
            char c = s.charAt(end++);
            depth += c == '[' ? 1 : c == ']' ? -1 : 0;
            if (depth == 0) {
                break;
            }
        }
        String list = s.substring(pos, end);
        return list.length() > EXCERPT_CHARS ? list.substring(0, EXCERPT_CHARS) + "..." : list;
    }

    private String excerpt(int from) {
        if (from >= s.length()) {
            return "the end of the header";
        }
        String rest = s.substring(from).strip();
        return "'"
                + (rest.length() > EXCERPT_CHARS ? rest.substring(0, EXCERPT_CHARS) + "..." : rest)
                + "'";
    }
}
