package io.minato.json;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The project's one JSON reader (device summaries, bench results, the web UI's REST answers in
 * tests): strict JSON (RFC 8259), read with Jackson's streaming parser into plain Java values:
 * objects as maps in document order, arrays as lists, strings, numbers as {@link Double}, {@link
 * Boolean} and null. Refused beyond the grammar: duplicate keys, numbers beyond a double's range,
 * nesting deeper than {@value #MAX_DEPTH} and anything after the value. Malformed text gets an
 * {@link IllegalArgumentException} of one line: what Jackson found, and where (line and column).
 */
public final class Json {
    /** The deepest nesting read; deeper documents are refused before they can exhaust the stack. */
    public static final int MAX_DEPTH = 256;

    private static final JsonFactory FACTORY =
            JsonFactory.builder()
                    .streamReadConstraints(
                            StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .build();

    // Jackson names a location inside its messages as "[Source: ...; line: L, column: C]".
    private static final Pattern SOURCE =
            Pattern.compile("\\[Source: [^;]*; line: (\\d+), column: (\\d+)\\]");

    private Json() {}

    /** The value {@code text} holds, nothing but white space around it. */
    public static Object parse(String text) {
        JsonParser p;
        try {
            p = FACTORY.createParser(text);
        } catch (IOException e) {
            throw new IllegalArgumentException(oneLine(String.valueOf(e.getMessage())));
        }
        try (p) {
            JsonToken first = p.nextToken();
            if (first == null) {
                throw error("expected a value, found the end of the text", p.currentLocation());
            }
            Object v = value(p, first);
            if (p.nextToken() != null) {
                throw error("unexpected text after the value", p.currentTokenLocation());
            }
            return v;
        } catch (JacksonException e) {
            // Exceeded constraints (nesting, a number's length) carry no location: the parser's.
            throw error(
                    e.getOriginalMessage(),
                    e.getLocation() != null ? e.getLocation() : p.currentLocation());
        } catch (IOException e) {
            // Not from a String; kept one line all the same.
            throw new IllegalArgumentException(oneLine(String.valueOf(e.getMessage())));
        }
    }

    private static Object value(JsonParser p, JsonToken t) throws IOException {
        if (t == null) { // Jackson reports an early end itself; kept safe all the same
            throw error("expected a value, found the end of the text", p.currentLocation());
        }
        switch (t) {
            case START_OBJECT -> {
                Map<String, Object> object = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    object.put(key, value(p, p.nextToken()));
                }
                return object;
            }
            case START_ARRAY -> {
                List<Object> array = new ArrayList<>();
                for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
                    array.add(value(p, e));
                }
                return array;
            }
            case VALUE_STRING -> {
                return p.getText();
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                double d = p.getDoubleValue();
                if (!Double.isFinite(d)) {
                    throw error("number out of range", p.currentTokenLocation());
                }
                return d;
            }
            case VALUE_TRUE -> {
                return Boolean.TRUE;
            }
            case VALUE_FALSE -> {
                return Boolean.FALSE;
            }
            case VALUE_NULL -> {
                return null;
            }
            default -> throw error("expected a value, found " + t, p.currentTokenLocation());
        }
    }

    private static IllegalArgumentException error(String what, JsonLocation where) {
        String message =
                oneLine(SOURCE.matcher(String.valueOf(what)).replaceAll("line $1, column $2"));
        if (where == null || where.getLineNr() < 1) {
            return new IllegalArgumentException(message);
        }
        return new IllegalArgumentException(
                message + " at line " + where.getLineNr() + ", column " + where.getColumnNr());
    }

    private static String oneLine(String s) {
        return s.replace("\r", "\\r").replace("\n", "\\n");
    }
}
