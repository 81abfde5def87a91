package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * File names under {@code LC_ALL=C}, as containers and CI run: a JVM started there holds file names
 * in ASCII. Each test starts a JVM of its own under that locale (the suite's JVMs run under a UTF-8
 * one).
 */
class LocaleTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @TempDir static Path data;
    @TempDir Path out;

    @BeforeAll
    static void folder() throws IOException {
        ImageFormatFolder.write(data);
    }

    /** Runs {@code command} in bash from the repository root under LC_ALL=C; stdout and stderr. */
    private static String[] underCLocale(String command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).directory(ROOT.toFile());
        pb.environment().remove("LANG");
        pb.environment().remove("LC_CTYPE");
        pb.environment().put("LC_ALL", "C");
        pb.environment().put("MINATO_CP", System.getProperty("java.class.path"));
        pb.environment()
                .put(
                        "MINATO_JAVA",
                        Path.of(System.getProperty("java.home"), "bin", "java").toString());
        Path stdout = Files.createTempFile("locale", ".out");
        Path stderr = Files.createTempFile("locale", ".err");
        Process p = pb.redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).as("finished").isTrue();
        String[] result = {
            Integer.toString(p.exitValue()),
            Files.readString(stdout, StandardCharsets.UTF_8),
            Files.readString(stderr, StandardCharsets.ISO_8859_1)
        };
        Files.delete(stdout);
        Files.delete(stderr);
        return result;
    }

    private String trainArgs() {
        return String.join(
                " ",
                List.of(
                        "io.minato.job.Main train --workload images --data",
                        "'" + data + "'",
                        "--patch 16 --epochs 1 --eval-cases 0 --workers 1",
                        "--accelerator simulated:1 --no-web-ui --progress-interval 0 --no-plots",
                        "--run-dir '" + out.resolve("run") + "'",
                        "--trace '" + out.resolve("trace.csv") + "'"));
    }

    @Test
    void shouldTrainANonAsciiNameUnderACLocaleThroughTheLaunchersSetUp() throws Exception {
        String[] run =
                underCLocale(
                        "source scripts/lib.sh && locale charmap >&2 && exec \"$MINATO_JAVA\""
                                + " $(minato_jvm_options) -cp \"$MINATO_CP\" "
                                + trainArgs());

        assertThat(run[0]).as(run[2]).isEqualTo("0");
        assertThat(run[2]).startsWith("UTF-8");
        List<String> cases = new ArrayList<>();
        for (String line : Files.readAllLines(out.resolve("trace.csv"), StandardCharsets.UTF_8)) {
            cases.add(line.split(",")[2]);
        }
        assertThat(cases).contains(ImageFormatFolder.NON_ASCII);
    }

    @Test
    void shouldSayInOneLineToRunUnderAUtf8LocaleWhenTheJvmCannotHoldAName() throws Exception {
        String[] run =
                underCLocale(
                        "exec \"$MINATO_JAVA\" -XX:+IgnoreUnrecognizedVMOptions -cp \"$MINATO_CP\" "
                                + trainArgs());

        assertThat(run[0]).isNotEqualTo("0");
        assertThat(run[2])
                .contains("error: ")
                .contains("b/caf")
                .contains("run under a UTF-8 locale (LC_ALL=C.UTF-8)")
                .doesNotContain("\tat ");
    }
}
