package io.minato.loader;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.flink.api.common.accumulators.AverageAccumulator;
import org.apache.flink.api.common.accumulators.DoubleMaximum;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Accumulators of a detached job, kept as files and merged as Flink merges them. */
class AccumulatorFilesTest {
    @TempDir Path dir;

    @Test
    void shouldMergeEverySubtasksFileAsFlinkMergesAccumulators() throws IOException {
        AccumulatorFiles.write(dir.resolve("first").resolve("Source-0"), min(700));
        AccumulatorFiles.write(dir.resolve("timeout").resolve("Augment-0"), max(40.5));
        AccumulatorFiles.write(dir.resolve("timeout").resolve("Augment-1"), max(52.0));
        AccumulatorFiles.write(dir.resolve("mean").resolve("Augment-0"), mean(1, 3));
        AccumulatorFiles.write(dir.resolve("mean").resolve("Augment-1"), mean(2));
        AccumulatorFiles.write(dir.resolve("hits").resolve("Augment-0"), count(5));
        AccumulatorFiles.write(dir.resolve("hits").resolve("SlowPath-0"), count(7));
        // A restarted subtask overwrites its failed attempt's values.
        AccumulatorFiles.write(dir.resolve("hits").resolve("SlowPath-0"), count(9));

        Map<String, Object> results = AccumulatorFiles.read(dir);

        assertThat(results)
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("first", 700L, "timeout", 52.0, "mean", 2.0, "hits", 14L));
    }

    @Test
    void shouldReadNoFolderAsNoAccumulators() throws IOException {
        assertThat(AccumulatorFiles.read(dir.resolve("none"))).isEmpty();
    }

    @Test
    void shouldNameAFileThatIsNoAccumulatorInOneLine() throws IOException {
        Path bad = dir.resolve("hits").resolve("Augment-0");
        Files.createDirectories(bad.getParent());
        Files.writeString(bad, "not serialized");
        assertThatThrownBy(() -> AccumulatorFiles.read(dir))
                .isInstanceOf(IOException.class)
                .hasMessageStartingWith(bad + ": not an accumulator file")
                .hasMessageNotContaining("\n");

        AccumulatorFiles.write(bad, count(3));
        byte[] whole = Files.readAllBytes(bad);
        Files.write(bad, java.util.Arrays.copyOf(whole, whole.length / 2));
        assertThatThrownBy(() -> AccumulatorFiles.read(dir))
                .isInstanceOf(IOException.class)
                .hasMessageStartingWith(bad.toString());
    }

    private static LongMinimum min(long v) {
        LongMinimum a = new LongMinimum();
        a.add(v);
        return a;
    }

    private static DoubleMaximum max(double v) {
        DoubleMaximum a = new DoubleMaximum();
        a.add(v);
        return a;
    }

    private static AverageAccumulator mean(double... vs) {
        AverageAccumulator a = new AverageAccumulator();
        for (double v : vs) {
            a.add(v);
        }
        return a;
    }

    private static LongCounter count(long v) {
        return new LongCounter(v);
    }
}
