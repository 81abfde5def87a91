package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.minato.trainer.ConvolutionCheck.Case;
import io.minato.trainer.ConvolutionCheck.Finding;
import org.junit.jupiter.api.Test;

class ConvolutionCheckTest {
    private static final Case SMALL = new Case(3, 2, 4, 3, 16, 3);

    /**
     * The tests' JVMs run as the scripts start theirs (ONEDNN_MAX_CPU_ISA=AVX): there libtorch's
     * float convolutions agree with double precision, which they did not with oneDNN's AVX2 and
     * AVX-512 kernels on the CPU this was found on.
     */
    @Test
    void shouldFindFloatConvolutionsAgreeWithDoublePrecisionHere() {
        for (int dimensions : new int[] {2, 3}) {
            Finding worst = ConvolutionCheck.worst(dimensions);
            assertThat(worst.error())
                    .as("%s of a %s", worst.quantity(), worst.of().describe())
                    .isLessThanOrEqualTo(ConvolutionCheck.TOLERANCE);
            assertThatCode(() -> ConvolutionCheck.requireOnCpu(dimensions))
                    .doesNotThrowAnyException();
        }
    }

    @Test
    void shouldRefuseAnErrorAboveTheToleranceNamingTheCaseAndWhatToSet() {
        String message = ConvolutionCheck.verdict(new Finding(SMALL, "input gradient", 0.92), null);
        assertThat(message)
                .contains("input gradient of a 3-d convolution of 4 to 3 channels is off by 92 %")
                .contains("ONEDNN_MAX_CPU_ISA=unset")
                .contains("start the JVMs with ONEDNN_MAX_CPU_ISA=AVX")
                .doesNotContain("\n");
        assertThat(ConvolutionCheck.verdict(new Finding(SMALL, "output", 0.31), "AVX2"))
                .contains("output of a 3-d convolution of 4 to 3 channels is off by 31 %")
                .contains("ONEDNN_MAX_CPU_ISA=AVX2");
    }

    @Test
    void shouldRefuseNaNAndPassWithinTheTolerance() {
        assertThat(
                        ConvolutionCheck.verdict(
                                new Finding(SMALL, "input gradient", Double.NaN), "ALL"))
                .contains("is NaN");
        assertThat(ConvolutionCheck.verdict(new Finding(SMALL, "output", 4e-7), null)).isEmpty();
    }

    @Test
    void shouldMeasureTheLargestDifferenceAgainstTheLargestReferenceValue() {
        float[] reference = {2f, -4f, 1f};
        assertThat(ConvolutionCheck.relativeError(new float[] {2f, -4f, 1f}, reference)).isZero();
        assertThat(ConvolutionCheck.relativeError(new float[] {2f, -3f, 1f}, reference))
                .isEqualTo(0.25);
        assertThat(ConvolutionCheck.relativeError(new float[] {2f, Float.NaN, 1f}, reference))
                .isNaN();
    }
}
