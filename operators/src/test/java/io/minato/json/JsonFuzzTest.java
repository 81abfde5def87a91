package io.minato.json;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;

/**
 * Any text at all as JSON (the reader of device summaries and bench results): a value, or one
 * {@link IllegalArgumentException} line saying what was expected where; no other exception (a stack
 * overflow from deep nesting included), no hang. With the suite the seeds in {@code
 * JsonFuzzTestInputs} run; {@code JAZZER_FUZZ=1} fuzzes for {@code maxDuration}; the standalone
 * driver takes {@link #fuzzerTestOneInput} for long runs (README).
 */
class JsonFuzzTest {
    @FuzzTest(maxDuration = "60s")
    void parsesAnyTextOrSaysWhereNotInOneLine(byte[] bytes) {
        fuzzerTestOneInput(bytes);
    }

    /** The target, also for Jazzer's standalone driver ({@code --target_class}). */
    public static void fuzzerTestOneInput(byte[] bytes) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        try {
            Json.parse(text);
        } catch (IllegalArgumentException e) {
            assertThat(e.getMessage()).doesNotContain("\n").contains(" at line ");
        }
    }
}
