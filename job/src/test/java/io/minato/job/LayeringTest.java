package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The command line stays at its door: only the commands and their option mixins import picocli, and
 * the Java API ({@code io.minato.job.dataflow}) and the workloads import nothing of the
 * command-line package. Read from the sources, which Maven runs the tests beside.
 */
class LayeringTest {
    private static final Path MAIN = Path.of("src", "main", "java", "io", "minato", "job");

    @Test
    void shouldImportPicocliOnlyInTheCommandsAndTheirOptions() {
        List<String> importing =
                sources(MAIN).stream()
                        .filter(f -> read(f).contains("import picocli."))
                        .filter(f -> !read(f).contains("@Command("))
                        .map(f -> MAIN.relativize(f).toString())
                        .toList();
        assertThat(importing)
                .as("classes importing picocli that are not commands")
                .containsExactlyInAnyOrder(
                        "DataOptions.java",
                        "ModelOptions.java",
                        "OptimizerOptions.java",
                        "BatchOptions.java");
    }

    @Test
    void shouldKeepTheJavaApiAndTheWorkloadsFreeOfTheCommandLine() {
        for (String pkg : List.of("dataflow", "workload")) {
            for (Path f : sources(MAIN.resolve(pkg))) {
                assertThat(read(f))
                        .as(MAIN.relativize(f).toString())
                        .doesNotContain("import picocli.")
                        .doesNotContainPattern("import io\\.minato\\.job\\.[A-Z]");
            }
        }
    }

    private static List<Path> sources(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            List<Path> found = files.filter(f -> f.toString().endsWith(".java")).toList();
            assertThat(found).as("sources under " + dir.toAbsolutePath()).isNotEmpty();
            return found;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path f) {
        try {
            return Files.readString(f);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
