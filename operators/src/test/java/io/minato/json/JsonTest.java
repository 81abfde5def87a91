package io.minato.json;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class JsonTest {

    @Test
    void shouldReadNestedObjectsAndArraysInDocumentOrder() {
        Object v =
                Json.parse(
                        " [ {\"b\": 1, \"a\": {\"x\": [true, false, null]}, \"c\": []},"
                                + "\n\t{} ]\r\n");
        assertThat(v).isInstanceOf(List.class);
        List<?> a = (List<?>) v;
        assertThat(a).hasSize(2);
        Map<?, ?> first = (Map<?, ?>) a.get(0);
        assertThat(List.copyOf(first.keySet())).isEqualTo(List.of("b", "a", "c"));
        assertThat(first.get("b")).isEqualTo(1.0);
        assertThat(((Map<?, ?>) first.get("a")).get("x"))
                .isEqualTo(Arrays.asList(true, false, null));
        assertThat(first.get("c")).isEqualTo(List.of());
        assertThat(a.get(1)).isEqualTo(Map.of());
    }

    @Test
    void shouldReadNumbersAsTheGrammarHasThem() {
        assertThat(Json.parse("[0, -0.5, 12, 1e3, 2.5E-2, -7E+1, 9007199254740993]"))
                .isEqualTo(List.of(0.0, -0.5, 12.0, 1000.0, 0.025, -70.0, 9007199254740992.0));
    }

    @Test
    void shouldUnescapeStrings() {
        assertThat(Json.parse("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9\\u2713 é\""))
                .isEqualTo("q\" b\\ s/ \b\f\n\r\t é✓ é");
    }

    static Stream<Arguments> malformed() {
        return Stream.of(
                Arguments.of("", "expected a value, found the end of the text at line 1, column 1"),
                Arguments.of(
                        "[1, 2,]", "Unexpected character (']' (code 93)): expected a valid value"),
                Arguments.of("{\"a\": 1,}", "was expecting double-quote to start field name"),
                Arguments.of("{\"a\" 1}", "was expecting a colon to separate field name and value"),
                Arguments.of("{\"a\": 1, \"a\": 2}", "Duplicate field 'a' at line 1, column 13"),
                Arguments.of("[1 2]", "was expecting comma to separate Array entries"),
                Arguments.of(
                        "{\"a\": 1",
                        "Unexpected end-of-input: expected close marker for Object (start marker"
                                + " at line 1, column 1) at line 1, column 8"),
                Arguments.of("[01]", "Leading zeroes not allowed at line 1, column 3"),
                Arguments.of("[1.]", "Decimal point not followed by a digit"),
                Arguments.of("[1e]", "Exponent indicator not followed by a digit"),
                Arguments.of("[-]", "expected digit (0-9) to follow minus sign"),
                Arguments.of("[NaN]", "Non-standard token 'NaN'"),
                Arguments.of("[nul]", "Unrecognized token 'nul'"),
                Arguments.of("[1e999]", "number out of range at line 1, column 2"),
                Arguments.of(
                        "[" + "9".repeat(400) + "]", "number out of range at line 1, column 2"),
                Arguments.of("[" + "1".repeat(2000) + "]", "Number value length (2000) exceeds"),
                Arguments.of("\"abc", "was expecting closing quote for a string value"),
                Arguments.of("\"\\x\"", "Unrecognized character escape 'x' (code 120)"),
                // Found by fuzzing: the quoted text held a line break, and the error two lines.
                Arguments.of("\"\\\n", "Unrecognized character escape (CTRL-CHAR, code 10)"),
                Arguments.of("{\"a\\nb\": 1, \"a\\nb\": 2}", "Duplicate field 'a\\nb'"),
                Arguments.of("\"\\u12g4\"", "expected a hex-digit for character escape sequence"),
                Arguments.of("{} {}", "unexpected text after the value at line 1, column 4"),
                Arguments.of("{} x", "Unrecognized token 'x'"),
                Arguments.of("[\n  \"a\tb\"\n]", "(CTRL-CHAR, code 9)): has to be escaped"),
                Arguments.of("[\n  1,\n  }", "expected a value at line 3, column 3"));
    }

    @ParameterizedTest
    @MethodSource("malformed")
    void shouldRefuseMalformedTextInOneLineSayingWhere(String text, String message) {
        assertThatThrownBy(() -> Json.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message)
                .hasMessageMatching("[^\\n]* at line \\d+, column \\d+");
    }

    @Test
    void shouldRefuseNestingDeeperThan256() {
        assertThat(Json.parse("[".repeat(256) + "]".repeat(256))).isInstanceOf(List.class);
        assertThatThrownBy(() -> Json.parse("[".repeat(257) + "]".repeat(257)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Document nesting depth (257) exceeds the maximum allowed");
    }
}
