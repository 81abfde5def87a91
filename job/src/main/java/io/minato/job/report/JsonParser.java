package io.minato.job.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259) into plain Java values: objects as maps in document order, arrays
 * as lists, strings, numbers as {@link Double}, {@link Boolean} and null. Refused beyond the
 * grammar: duplicate keys, numbers out of double range and nesting deeper than 256. Malformed text
 * gets an {@link IllegalArgumentException} of one line saying what was expected where (line and
 * column).
 */
public final class JsonParser {
    private static final int MAX_DEPTH = 256;

    private final String s;
    private int i;
    private int depth;

    private JsonParser(String s) {
        this.s = s;
    }

    /** The value {@code text} holds, nothing but white space around it. */
    public static Object parse(String text) {
        JsonParser p = new JsonParser(text);
        p.space();
        Object v = p.value();
        p.space();
        if (p.i < p.s.length()) {
            throw p.error("unexpected text after the value");
        }
        return v;
    }

    private Object value() {
        if (i >= s.length()) {
            throw error("expected a value, found the end of the text");
        }
        char c = s.charAt(i);
        return switch (c) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || isDigit(c)) {
                    yield number();
                }
                throw error("expected a value, found '" + c + "'");
            }
        };
    }

    private Map<String, Object> object() {
        enter();
        Map<String, Object> m = new LinkedHashMap<>();
        space();
        if (take('}')) {
            depth--;
            return m;
        }
        do {
            space();
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("expected a string key");
            }
            int at = i;
            String key = string();
            if (m.containsKey(key)) {
                i = at;
                throw error("duplicate key \"" + key + "\"");
            }
            space();
            if (!take(':')) {
                throw error("expected ':'");
            }
            space();
            m.put(key, value());
            space();
        } while (take(','));
        if (!take('}')) {
            throw error("expected ',' or '}'");
        }
        depth--;
        return m;
    }

    private List<Object> array() {
        enter();
        List<Object> a = new ArrayList<>();
        space();
        if (take(']')) {
            depth--;
            return a;
        }
        do {
            space();
            a.add(value());
            space();
        } while (take(','));
        if (!take(']')) {
            throw error("expected ',' or ']'");
        }
        depth--;
        return a;
    }

    /** Steps over the opening bracket, one level deeper. */
    private void enter() {
        if (++depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        i++;
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) {
            throw error("expected a value");
        }
        i += word.length();
        return v;
    }

    private Double number() {
        int start = i;
        take('-');
        if (!take('0')) {
            if (!digits()) {
                throw error("expected a digit");
            }
        }
        if (take('.') && !digits()) {
            throw error("expected a digit after '.'");
        }
        if (take('e') || take('E')) {
            if (!take('+')) {
                take('-');
            }
            if (!digits()) {
                throw error("expected a digit in the exponent");
            }
        }
        double v = Double.parseDouble(s.substring(start, i));
        if (Double.isInfinite(v)) {
            i = start;
            throw error("number out of range");
        }
        return v;
    }

    /** Steps over a run of digits; whether there was one. */
    private boolean digits() {
        int start = i;
        while (i < s.length() && isDigit(s.charAt(i))) {
            i++;
        }
        return i > start;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private String string() {
        i++; // the opening quote
        StringBuilder b = new StringBuilder();
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '"') {
                i++;
                return b.toString();
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            i++;
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (i >= s.length()) {
                break;
            }
            char e = s.charAt(i++);
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> b.append(hex4());
                default -> {
                    i--;
                    throw error("bad escape \\" + e);
                }
            }
        }
        throw error("unterminated string");
    }

    private char hex4() {
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int d = i < s.length() ? Character.digit(s.charAt(i), 16) : -1;
            if (d < 0) {
                throw error("expected 4 hex digits after \\u");
            }
            v = v * 16 + d;
            i++;
        }
        return (char) v;
    }

    private void space() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            i++;
        }
    }

    private boolean take(char c) {
        if (i < s.length() && s.charAt(i) == c) {
            i++;
            return true;
        }
        return false;
    }

    private IllegalArgumentException error(String what) {
        int line = 1;
        int lineStart = 0;
        for (int k = 0; k < Math.min(i, s.length()); k++) {
            if (s.charAt(k) == '\n') {
                line++;
                lineStart = k + 1;
            }
        }
        return new IllegalArgumentException(
                printable(what) + " at line " + line + ", column " + (i - lineStart + 1));
    }

    /**
     * {@code what} with control characters and line breaks written as escapes: the text it quotes
     * (a bad escape, a key) may hold any, and the error stays one line (found by fuzzing: a
     * backslash before a newline).
     */
    static String printable(String what) {
        StringBuilder b = new StringBuilder(what.length());
        for (int k = 0; k < what.length(); k++) {
            char c = what.charAt(k);
            switch (c) {
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f || c == 0x85 || c == 0x2028 || c == 0x2029) {
                        b.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.toString();
    }
}
