package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.workload.JobWorkload;
import io.minato.job.workload.Workloads;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code --workload} as the registry makes it: every registered workload parses by its name, help
 * lists them all, and what a workload refuses is its own one line.
 */
class WorkloadOptionTest {

    private static final String NAMES =
            Workloads.all().stream().map(JobWorkload::name).collect(Collectors.joining(", "));

    @Test
    void shouldParseEveryRegisteredWorkloadByItsNameAndDefaultToKits19() {
        assertThat(Workloads.all())
                .extracting(JobWorkload::name)
                .doesNotHaveDuplicates()
                .contains("kits19", "images");
        for (JobWorkload w : Workloads.all()) {
            assertThat(train("--workload", w.name()).workload).as(w.name()).isSameAs(w);
        }
        assertThat(train().workload.name()).isEqualTo("kits19");
        assertThat(new DataOptions().workload.name()).isEqualTo("kits19");
    }

    @Test
    void shouldListTheRegisteredWorkloadsInHelpAndRefuseAnyOtherNamingThem() {
        for (String command : List.of("train", "profile", "evaluate")) {
            String help = MainTest.run(command, "--help").out().replaceAll("\\s+", " ");
            assertThat(help).as(command).contains("one of " + NAMES + " (default: kits19)");
        }
        MainTest.Run run = MainTest.run("train", "--workload", "audio");
        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err().strip())
                .isEqualTo(
                        "error: Invalid value for option '--workload': expected one of ["
                                + NAMES
                                + "] (case-sensitive) but was 'audio' (see --help)");
    }

    @Test
    void shouldTakeEachWorkloadsOwnEdgeUnlessPatchIsGiven() {
        assertThat(train().patchEdge()).isEqualTo(32);
        assertThat(train("--data", "d").patchEdge()).isEqualTo(128);
        assertThat(train("--workload", "images").patchEdge()).isEqualTo(64);
        assertThat(train("--workload", "images", "--data", "d").patchEdge()).isEqualTo(224);
        assertThat(train("--workload", "images", "--patch", "48").patchEdge()).isEqualTo(48);
    }

    @Test
    void shouldRefuseEvaluateInTheWorkloadsOwnLine() {
        refusals(List.of("evaluate", "--model", "/nonexistent"), JobWorkload::refusesEvaluate);
        assertThat(Workloads.named("images").refusesEvaluate()).isEmpty();
    }

    /** Every workload that refuses {@code command} is refused with its line, before any data. */
    private static void refusals(
            List<String> command, Function<JobWorkload, Optional<String>> refusal) {
        for (JobWorkload w : Workloads.all()) {
            Optional<String> line = refusal.apply(w);
            if (line.isEmpty()) {
                continue;
            }
            List<String> args = new ArrayList<>(command);
            args.addAll(List.of("--workload", w.name(), "--data", "/nonexistent"));
            MainTest.Run run = MainTest.run(args.toArray(String[]::new));
            assertThat(run.status()).as(command + " " + w.name()).isEqualTo(2);
            assertThat(run.err().strip()).isEqualTo("error: " + line.get() + " (see --help)");
        }
    }

    /** Train's data options as parsed from {@code args}. */
    private static DataOptions train(String... args) {
        TrainCommand train = new TrainCommand();
        new CommandLine(train).parseArgs(args);
        return train.data;
    }
}
