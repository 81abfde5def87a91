package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StepTimeCommandTest {

    /** step-time of the smallest 3D-UNet on one patch of 32, with {@code more} options. */
    private static MainTest.Run tinyStep(String... more) {
        String[] args = {"step-time", "--width", "0.125", "--patch", "32", "--batch", "1"};
        String[] all = java.util.Arrays.copyOf(args, args.length + more.length);
        System.arraycopy(more, 0, all, args.length, more.length);
        return MainTest.run(all);
    }

    @Test
    void shouldTimeTheRealStepForEachWidthAndPatch() {
        var run = tinyStep("--repeats", "2");
        assertThat(run.status()).as(run.err()).isZero();
        String[] lines = run.out().strip().split("\n");
        assertThat(lines).hasSize(2);
        assertThat(lines[0].trim().split("\\s+"))
                .containsExactly(
                        "width",
                        "patch",
                        "batch",
                        "median",
                        "ms",
                        "min",
                        "ms",
                        "max",
                        "ms",
                        "copy",
                        "forward",
                        "backward",
                        "update",
                        "peak",
                        "MB",
                        "precision");
        String[] cells = lines[1].trim().split("\\s+");
        assertThat(cells).hasSize(12);
        assertThat(cells[11]).as("auto on the CPU").isEqualTo("fp32");
        assertThat(cells[0]).isEqualTo("0.125");
        assertThat(cells[1]).isEqualTo("32");
        assertThat(cells[2]).isEqualTo("1");
        long median = Long.parseLong(cells[3]);
        long max = Long.parseLong(cells[5]);
        assertThat(Long.parseLong(cells[4])).isLessThanOrEqualTo(median);
        assertThat(max).isGreaterThanOrEqualTo(median);
        // The phases' medians: the forward and backward passes take time, and no phase, nor
        // their sum, takes longer than the longest step (each to a millisecond).
        double sum = 0;
        for (int phase = 6; phase <= 9; phase++) {
            double ms = Double.parseDouble(cells[phase]);
            assertThat(ms).isGreaterThanOrEqualTo(0);
            sum += ms;
        }
        assertThat(Double.parseDouble(cells[7])).as("forward").isPositive();
        assertThat(Double.parseDouble(cells[8])).as("backward").isPositive();
        assertThat(sum).isLessThanOrEqualTo(max + 4);
        assertThat(Long.parseLong(cells[10])).as("peak MB of the process").isPositive();
    }

    /** Mixed precision on the CPU: slow float16 kernels, but the same step as on a GPU. */
    @Test
    void shouldTimeAMixedPrecisionStepWhenAskedAndRefuseAnUnknownPrecisionInOneLine() {
        var run = tinyStep("--repeats", "1", "--precision", "fp16");
        assertThat(run.status()).as(run.err()).isZero();
        String[] cells = run.out().strip().split("\n")[1].trim().split("\\s+");
        assertThat(cells[11]).isEqualTo("fp16");
        assertThat(Double.parseDouble(cells[8])).as("backward").isPositive();
        var bad = MainTest.run("step-time", "--precision", "bf16");
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err())
                .contains("unknown precision 'bf16': expected auto, fp32 or fp16")
                .contains("--precision");
    }

    @Test
    void shouldRefuseADeviceThatIsNotHereInOneLine() {
        var gone = MainTest.run("step-time", "--device", "gpu:9999");
        assertThat(gone.status()).isEqualTo(2);
        assertThat(gone.err()).contains("--device gpu:9999: libtorch sees").contains("GPU(s) here");
        var odd = MainTest.run("step-time", "--device", "tpu");
        assertThat(odd.status()).isEqualTo(2);
        assertThat(odd.err()).contains("--device tpu: expected cpu, gpu or gpu:N");
    }

    @Test
    void shouldRefuseAPatchTheUnetCannotTakeInOneLine() {
        var run = MainTest.run("step-time", "--patch", "48");
        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).contains("--patch 48 must be a multiple of 32");
    }
}
