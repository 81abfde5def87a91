package io.minato.trainer.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class GpuProbeTest {

    /** Skips a test that describes a machine without NVIDIA driver (this one, CI). */
    static void assumeNoNvidiaDriver() {
        assumeTrue(Files.notExists(Path.of("/dev/nvidiactl")), "an NVIDIA driver is loaded here");
    }

    @Test
    void shouldReportNoGpuWithOneLineReasonWhenCudaLibrariesAreMissing() {
        assumeNoNvidiaDriver();
        Gpus gpus = GpuProbe.detect();

        assertThat(gpus.present()).isFalse();
        assertThat(gpus.list()).isEmpty();
        assertThat(gpus.cause()).isEqualTo(GpuProbe.LIBRARIES_NOT_FOUND);
        assertThat(gpus.reason())
                .startsWith("no GPU: CUDA/NVML libraries not found (UnsatisfiedLinkError: ")
                .doesNotContain("\n");
    }

    @Test
    void shouldDescribeWhatItFoundOnOneLineOnAnyMachine() {
        Gpus gpus = GpuProbe.detect();

        assertThat(gpus.reason()).doesNotContain("\n");
        assertThat(gpus.present()).isEqualTo(!gpus.reason().startsWith("no GPU: "));
    }

    @Test
    void shouldGiveTheSameAnswerAgainWithoutRetryingTheNativeLoad() {
        assertThatCode(GpuProbe::detect).doesNotThrowAnyException();
        assertThat(GpuProbe.detect()).isSameAs(GpuProbe.detect());
    }

    @Test
    void shouldGiveUpOnAProbeThatHangs() throws InterruptedException {
        CountDownLatch never = new CountDownLatch(1);
        Gpus gpus =
                GpuProbe.detectWithin(
                        Duration.ofMillis(50),
                        () -> {
                            try {
                                never.await();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            return Gpus.none("unreachable", "");
                        });

        assertThat(gpus.present()).isFalse();
        assertThat(gpus.reason()).isEqualTo("no GPU: NVML did not answer (gave up after 50 ms)");
        never.countDown();
    }

    @Test
    void shouldReportAProbeThatThrowsAsNoGpu() {
        Gpus gpus =
                GpuProbe.detectWithin(
                        Duration.ofSeconds(5),
                        () -> {
                            throw new IllegalStateException("driver said no\nsecond line");
                        });

        assertThat(gpus.reason())
                .isEqualTo("no GPU: GPU probe failed (IllegalStateException: driver said no)");
    }

    @Test
    void shouldDropTheLibraryPathFromALinkErrorMessage() {
        UnsatisfiedLinkError e =
                new UnsatisfiedLinkError("no jnicudart in java.library.path: /usr/lib:/lib");

        assertThat(GpuProbe.oneLine(e))
                .isEqualTo("UnsatisfiedLinkError: no jnicudart in java.library.path");
    }

    @Test
    void shouldNameTheMissingLibraryThatJavaCppTriedFirst() {
        UnsatisfiedLinkError e =
                new UnsatisfiedLinkError("no jnicudart in java.library.path: /lib");
        e.initCause(
                new UnsatisfiedLinkError(
                        "/root/.javacpp/cache/x.jar/org/bytedeco/cuda/linux-x86_64/libjnicudart.so:"
                                + " libcudart.so.13: cannot open shared object file: No such file"
                                + " or directory"));

        assertThat(GpuProbe.oneLine(e))
                .isEqualTo(
                        "UnsatisfiedLinkError: no jnicudart in java.library.path; libcudart.so.13:"
                                + " cannot open shared object file: No such file or directory");
    }

    @Test
    void shouldDescribeFoundGpusOnOneLine() {
        Gpus gpus =
                Gpus.found(
                        List.of(
                                new Gpu(0, "NVIDIA H100 80GB HBM3", 85_520_809_984L),
                                new Gpu(1, "NVIDIA H100 80GB HBM3", 85_520_809_984L)));

        assertThat(gpus.reason())
                .isEqualTo(
                        "2 GPUs: 0 NVIDIA H100 80GB HBM3 (79.6 GiB), 1 NVIDIA H100 80GB HBM3 (79.6"
                                + " GiB)");
        assertThat(gpus.get(1)).map(Gpu::index).contains(1);
        assertThat(gpus.get(2)).isEmpty();
    }
}
