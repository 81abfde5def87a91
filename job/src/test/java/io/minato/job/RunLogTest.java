package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.json.Json;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With the embedded run's logging (flink-conf/log4j-console.properties), the console carries
 * minato's lines only and Flink's warnings go to RUN_DIR/minato.log: a run whose trainer cannot
 * write (its trace on /dev/full) makes Flink restart the job twice, with a warning and a stack
 * trace each, and the console has one line for each restart and ends in one line.
 */
class RunLogTest {
    /** The trainers' coordinator's logger (the class is package-private in sink-trainer). */
    private static final String COORDINATOR = "io.minato.trainer.TrainerCoordinator";

    @Test
    void shouldKeepFlinksWarningsInTheRunLogAndOffTheConsole(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("data");
        KitsLikeGenerator.builder().optCases(4).optScale(0.1).optSeed(3).build().generate(data);
        Path run = dir.resolve("run");
        Path config = Path.of("..", "flink-conf", "log4j-console.properties").toAbsolutePath();
        Path console = dir.resolve("console.log");
        Process p =
                ResumeTest.startMain(
                        List.of("-Dlog4j.configurationFile=" + config),
                        MainTest.fullDiskRun(data, run),
                        console);
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
        String out = Files.readString(console);
        assertThat(p.exitValue()).as(out).isEqualTo(1);
        assertThat(out.lines().filter(l -> !l.isBlank()).toList())
                .as(out)
                .allMatch(
                        l ->
                                l.contains(" INFO  GpuProbe ")
                                        || l.contains(" WARN  TrainerCoordinator ")
                                        || l.startsWith("training: ")
                                        || l.startsWith("progress: ")
                                        || l.startsWith("error: "));
        assertThat(out).contains("error: " + run.resolve("trace-device-0.csv") + ": No space");
        assertThat(out).contains("The job failed (device 0: ").contains("and restarts from");
        assertThat(run.resolve("minato.log"))
                .content()
                .contains("WARN", "No space left on device", "\tat ");
    }

    @Test
    void shouldWriteMinatosMessagesAsJsonLinesInPlaceOfTheConsolesForALauncher(@TempDir Path dir)
            throws Exception {
        Path data = dir.resolve("data");
        KitsLikeGenerator.builder().optCases(4).optScale(0.1).optSeed(3).build().generate(data);
        Path run = dir.resolve("run");
        Path events = run.resolve("events.jsonl");
        Path config = Path.of("..", "flink-conf", "log4j-console.properties").toAbsolutePath();
        Path console = dir.resolve("console.log");
        List<String> args = new ArrayList<>(MainTest.fullDiskRun(data, run));
        args.addAll(List.of("--log-events", events.toString()));
        Process p =
                ResumeTest.startMain(List.of("-Dlog4j.configurationFile=" + config), args, console);
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
        String out = Files.readString(console);
        assertThat(p.exitValue()).as(out).isEqualTo(1);
        assertThat(out.lines().filter(l -> !l.isBlank()).toList())
                .as("the command's own lines only, log4j's in the events: %s", out)
                .allMatch(
                        l ->
                                l.startsWith("training: ")
                                        || l.startsWith("progress: ")
                                        || l.startsWith("error: "));
        List<Map<?, ?>> said = new ArrayList<>();
        for (String line : Files.readAllLines(events)) {
            said.add((Map<?, ?>) Json.parse(line));
        }
        assertThat(said)
                .as("each restore is minato's own warning, naming the failure")
                .filteredOn(e -> e.get("logger").equals(COORDINATOR))
                .hasSizeGreaterThanOrEqualTo(1)
                .allMatch(e -> e.get("level").equals("WARN"))
                .allMatch(e -> e.get("message").toString().contains("No space left on device"));
    }
}
