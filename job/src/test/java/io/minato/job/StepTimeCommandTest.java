package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StepTimeCommandTest {

    @Test
    void shouldTimeTheRealStepForEachWidthAndPatch() {
        var run =
                MainTest.run(
                        "step-time",
                        "--width",
                        "0.125",
                        "--patch",
                        "32",
                        "--batch",
                        "1",
                        "--repeats",
                        "2");
        assertThat(run.status()).as(run.err()).isZero();
        String[] lines = run.out().strip().split("\n");
        assertThat(lines).hasSize(2);
        assertThat(lines[0]).startsWith("width").contains("median ms");
        String[] cells = lines[1].trim().split("\\s+");
        assertThat(cells).hasSize(6);
        assertThat(cells[0]).isEqualTo("0.125");
        assertThat(cells[1]).isEqualTo("32");
        assertThat(cells[2]).isEqualTo("1");
        long median = Long.parseLong(cells[3]);
        assertThat(Long.parseLong(cells[4])).isLessThanOrEqualTo(median);
        assertThat(Long.parseLong(cells[5])).isGreaterThanOrEqualTo(median);
    }

    @Test
    void shouldRefuseAPatchTheUnetCannotTakeInOneLine() {
        var run = MainTest.run("step-time", "--patch", "48");
        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).contains("--patch 48 must be a multiple of 32");
    }
}
