package io.minato.job.generate;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class GenerateCommandTest {

    @TempDir Path dir;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @Test
    void shouldWriteTheDatasetAndPrintALinePerCaseAndASummary() {
        int exit =
                run(
                        "--out",
                        dir.toString(),
                        "--cases",
                        "3",
                        "--scale",
                        "0.05",
                        "--seed",
                        "3",
                        "--threads",
                        "2");

        assertThat(exit).isZero();
        assertThat(err.toString()).isEmpty();
        String[] lines = out.toString().split("\\R");
        assertThat(lines).hasSize(4);
        assertThat(lines[0]).matches("case_0000[0-2]  1x\\d+x\\d+x\\d+  \\d+\\.\\d MB  \\(1/3\\)");
        assertThat(lines[3])
                .startsWith("generated 3 cases (scale 0.05, seed 3) in ")
                .contains(" GB in ");
        assertThat(dir.resolve("case_00002_x.npy")).exists();
        assertThat(dir.resolve("case_00002_y.npy")).exists();
    }

    @Test
    void shouldWriteWhatTheGeneratorWritesForTheSameSettings() throws Exception {
        Path viaCli = dir.resolve("cli");
        Path viaApi = dir.resolve("api");

        run("--out", viaCli.toString(), "--cases", "2", "--scale", "0.05", "--seed", "5");
        KitsLikeGenerator.builder().optCases(2).optScale(0.05).optSeed(5).build().generate(viaApi);

        assertThat(NpyTestFiles.sha256(viaCli.resolve("case_00001_x.npy")))
                .isEqualTo(NpyTestFiles.sha256(viaApi.resolve("case_00001_x.npy")));
    }

    @Test
    void shouldDefaultToTheGeneratorsDefaults() {
        CommandLine.Model.CommandSpec spec =
                new CommandLine(new GenerateCommand()).getCommandSpec();

        assertThat(spec.findOption("--cases").defaultValue()).isEqualTo("40");
        assertThat(spec.findOption("--scale").defaultValue()).isEqualTo("0.25");
        assertThat(spec.findOption("--seed").defaultValue()).isEqualTo("7");
    }

    @Test
    void shouldRejectZeroCasesWithExitCode2() {
        assertThat(run("--out", dir.toString(), "--cases", "0")).isEqualTo(2);
        assertThat(err.toString()).startsWith("--cases must be at least 1, got 0");
    }

    @Test
    void shouldRejectAScaleOutsideZeroToFourWithExitCode2() {
        assertThat(run("--out", dir.toString(), "--scale", "0")).isEqualTo(2);
        assertThat(err.toString()).contains("--scale must be in (0, 4.0], got 0.0");
        assertThat(run("--out", dir.toString(), "--scale", "4.5")).isEqualTo(2);
    }

    @Test
    void shouldRequireAnOutputFolder() {
        assertThat(run("--cases", "1")).isEqualTo(2);
        assertThat(err.toString()).contains("--out");
    }

    @Test
    void shouldSayWhichFolderItCannotWriteAndExit1() throws Exception {
        Path file = dir.resolve("a-file");
        Files.writeString(file, "not a folder");

        assertThat(run("--out", file.toString(), "--cases", "1", "--scale", "0.05")).isEqualTo(1);
        assertThat(err.toString()).startsWith("generate: cannot write the dataset into " + file);
    }

    private int run(String... args) {
        CommandLine cli = new CommandLine(new GenerateCommand());
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        return cli.execute(args);
    }
}
