package io.minato.job.report;

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

class JsonParserTest {

    @Test
    void shouldReadNestedObjectsAndArraysInDocumentOrder() {
        Object v =
                JsonParser.parse(
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
        assertThat(JsonParser.parse("[0, -0.5, 12, 1e3, 2.5E-2, -7E+1]"))
                .isEqualTo(List.of(0.0, -0.5, 12.0, 1000.0, 0.025, -70.0));
    }

    @Test
    void shouldUnescapeStrings() {
        assertThat(JsonParser.parse("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9\\u2713 é\""))
                .isEqualTo("q\" b\\ s/ \b\f\n\r\t é✓ é");
    }

    static Stream<Arguments> malformed() {
        return Stream.of(
                Arguments.of("", "expected a value, found the end of the text at line 1, column 1"),
                Arguments.of("[1, 2,]", "expected a value, found ']' at line 1, column 7"),
                Arguments.of("{\"a\": 1,}", "expected a string key at line 1, column 9"),
                Arguments.of("{\"a\" 1}", "expected ':' at line 1, column 6"),
                Arguments.of("{\"a\": 1, \"a\": 2}", "duplicate key \"a\" at line 1, column 10"),
                Arguments.of("[1 2]", "expected ',' or ']' at line 1, column 4"),
                Arguments.of("{\"a\": 1", "expected ',' or '}' at line 1, column 8"),
                Arguments.of("[01]", "expected ',' or ']' at line 1, column 3"),
                Arguments.of("[1.]", "expected a digit after '.' at line 1, column 4"),
                Arguments.of("[1e]", "expected a digit in the exponent at line 1, column 4"),
                Arguments.of("[-]", "expected a digit at line 1, column 3"),
                Arguments.of("[NaN]", "expected a value, found 'N' at line 1, column 2"),
                Arguments.of("[nul]", "expected a value at line 1, column 2"),
                Arguments.of("[1e999]", "number out of range at line 1, column 2"),
                Arguments.of("\"abc", "unterminated string at line 1, column 5"),
                Arguments.of("\"\\x\"", "bad escape \\x at line 1, column 3"),
                // Found by fuzzing: the quoted text held a line break, and the error two lines.
                Arguments.of("\"\\\n", "bad escape \\\\n at line 1, column 3"),
                Arguments.of(
                        "{\"a\\nb\": 1, \"a\\nb\": 2}",
                        "duplicate key \"a\\nb\" at line 1, column 13"),
                Arguments.of("\"\\u12g4\"", "expected 4 hex digits after \\u at line 1, column 6"),
                Arguments.of("{} {}", "unexpected text after the value at line 1, column 4"));
    }

    @ParameterizedTest
    @MethodSource("malformed")
    void shouldRefuseMalformedTextInOneLineSayingWhere(String text, String message) {
        assertThatThrownBy(() -> JsonParser.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @Test
    void shouldCountLinesAndColumnsAndRefuseControlCharactersInStrings() {
        assertThatThrownBy(() -> JsonParser.parse("[\n  \"a\tb\"\n]"))
                .hasMessage("control character in a string at line 2, column 5");
        assertThatThrownBy(() -> JsonParser.parse("[\n  1,\n  }"))
                .hasMessage("expected a value, found '}' at line 3, column 3");
    }

    @Test
    void shouldRefuseNestingDeeperThan256() {
        assertThat(JsonParser.parse("[".repeat(256) + "]".repeat(256))).isInstanceOf(List.class);
        assertThatThrownBy(() -> JsonParser.parse("[".repeat(257) + "]".repeat(257)))
                .hasMessage("nested deeper than 256 at line 1, column 257");
    }
}
