package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.workload.kits19.KitsLikeGenerator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --cases FILE}: a run trains the cases its list names, holds out the folder's others, and
 * keeps its own copy of the list; a list that is not one stops the run in one line naming the file
 * and its line, before anything is trained.
 */
class CaseListTest {
    @TempDir static Path data;
    @TempDir Path dir;

    @BeforeAll
    static void generate() throws Exception {
        KitsLikeGenerator.builder().optCases(6).optScale(0.1).optSeed(5).build().generate(data);
    }

    @Test
    void shouldTrainOnlyTheListedCasesAndHoldOutTheOthers() throws Exception {
        Path list =
                Files.writeString(
                        dir.resolve("train.txt"),
                        "# the script's own split\ncase_00004\n\n  case_00001  \ncase_00002\n");
        Path run = dir.resolve("run");
        Path trace = dir.resolve("trace.csv");
        Path report = dir.resolve("report.json");
        MainTest.Run done =
                MainTest.run(
                        "train",
                        "--data",
                        data.toString(),
                        "--cases",
                        list.toString(),
                        "--patch",
                        "8",
                        "--epochs",
                        "2",
                        "--batch",
                        "1",
                        "--accelerator",
                        "simulated:1",
                        "--no-web-ui",
                        "--no-plots",
                        "--run-dir",
                        run.toString(),
                        "--trace",
                        trace.toString(),
                        "--report",
                        report.toString());
        assertThat(done.status()).as(done.err()).isZero();
        Set<String> cases = new TreeSet<>();
        for (String line : Files.readAllLines(trace).subList(1, 7)) {
            cases.add(line.split(",")[2]);
        }
        assertThat(Files.readAllLines(trace)).hasSize(1 + 2 * 3);
        assertThat(MiniClusterJobs.trainedOnce(trace)).hasSize(2 * 3);
        assertThat(cases).as("the trace names a case by its number").containsExactly("1", "2", "4");
        assertThat(report)
                .content()
                .contains("\"cases\": 6")
                .contains("\"train\": 3")
                .contains("\"eval\": 3");
        // The run keeps its own copy: a resume reads it whatever becomes of the file given.
        assertThat(run.resolve(RunArgs.CASES)).hasSameTextualContentAs(list);
        assertThat(
                        RunArgs.valueOf(
                                Files.readAllLines(run.resolve(RunArgs.FILE)), Set.of("--cases")))
                .contains(run.resolve(RunArgs.CASES).toAbsolutePath().toString());
    }

    @Test
    void shouldStopInOneLineNamingTheListAndItsLineWhenItIsNotOne() throws Exception {
        Path twice = Files.writeString(dir.resolve("twice.txt"), "case_00001\ncase_00001\n");
        Path unknown = Files.writeString(dir.resolve("unknown.txt"), "case_00000\ncase_00099\n");
        Path empty = Files.writeString(dir.resolve("empty.txt"), "# nothing\n\n");
        Path binary = Files.write(dir.resolve("binary.txt"), new byte[] {(byte) 0xff, (byte) 0xfe});
        String[][] bad = {
            {twice.toString(), twice + ": line 2: case_00001 is listed already on line 1"},
            {unknown.toString(), unknown + ": line 2: case_00099 is not in " + data},
            {empty.toString(), empty + ": lists no sample to train on"},
            {binary.toString(), binary + ": not UTF-8 text"},
            {dir.resolve("none.txt").toString(), dir.resolve("none.txt") + ": no such file"},
        };
        for (String[] b : bad) {
            Path run = dir.resolve("run-" + Path.of(b[0]).getFileName());
            MainTest.Run refused =
                    MainTest.run(
                            "train",
                            "--data",
                            data.toString(),
                            "--cases",
                            b[0],
                            "--patch",
                            "8",
                            "--accelerator",
                            "simulated:1",
                            "--no-web-ui",
                            "--run-dir",
                            run.toString());
            assertThat(refused.status()).as(refused.err()).isEqualTo(Main.EXIT_BAD_INPUT);
            assertThat(refused.err().strip()).doesNotContain("\n").contains(b[1]);
            assertThat(run).as("nothing written before the list was read").doesNotExist();
        }
        MainTest.Run both =
                MainTest.run(
                        "train",
                        "--data",
                        data.toString(),
                        "--cases",
                        twice.toString(),
                        "--eval-cases",
                        "1");
        assertThat(both.status()).isEqualTo(2);
        assertThat(both.err()).contains("--cases lists the training set").contains("--eval-cases");
    }

    @Test
    void shouldRefuseAResumeWithAnotherListButTakeTheSameNamesFromAnyFile() throws Exception {
        Path list = Files.writeString(dir.resolve("train.txt"), "case_00000\ncase_00003\n");
        Path run = Files.createDirectories(dir.resolve("run"));
        RunArgs.write(run, List.of("--data", data.toString(), "--cases", list.toString()));
        Files.delete(list); // the run's copy is what counts
        Path chk = Files.createDirectories(run.resolve("checkpoints/0123/chk-4"));
        Files.writeString(chk.resolve("_metadata"), "");

        Path other = Files.writeString(dir.resolve("other.txt"), "case_00000\n");
        MainTest.Run refused =
                MainTest.run("train", "--resume", run.toString(), "--cases", other.toString());
        assertThat(refused.status()).isEqualTo(2);
        assertThat(refused.err().strip())
                .doesNotContain("\n")
                .contains("--cases " + other + " would change what the run trains");

        Path unreadable = dir.resolve("gone.txt");
        MainTest.Run missing =
                MainTest.run("train", "--resume", run.toString(), "--cases", unreadable.toString());
        assertThat(missing.status()).isEqualTo(2);
        assertThat(missing.err().strip())
                .doesNotContain("\n")
                .contains("--resume " + run + ": " + unreadable + ": no such file");

        Path same = dir.resolve("same.txt");
        Files.write(
                same, List.of("case_00003", "# reordered", "case_00000"), StandardCharsets.UTF_8);
        List<String> args =
                new ArrayList<>(
                        List.of("train", "--resume", run.toString(), "--cases", same.toString()));
        MainTest.Run accepted = MainTest.run(args.toArray(String[]::new));
        assertThat(accepted.err())
                .as("the same names pass the check; the stand-in checkpoint then fails to restore")
                .doesNotContain("would change")
                .contains("resuming " + run);
    }
}
