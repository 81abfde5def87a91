package io.minato.workload.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import io.minato.sample.UnfinishedSample;
import io.minato.spi.Patch;
import io.minato.spi.SampleKey;
import io.minato.spi.SharedSample;
import io.minato.spi.Steps;
import io.minato.spi.Workload;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Python workload against real worker processes of Debian's Python (the repository's
 * minato_flink and python/tests/datasets.py): samples in shared memory, a pure function of their
 * identity, and a raising {@code __getitem__} as bad input.
 */
class PythonWorkloadTest {
    private static final String PYTHON = "/usr/bin/python3";

    @BeforeAll
    static void packagePath() {
        Path python = Path.of("..", "python").toAbsolutePath().normalize();
        System.setProperty(
                PythonWorkers.PACKAGE_PATH_PROPERTY, python + ":" + python.resolve("tests"));
    }

    @AfterAll
    static void clear() {
        System.clearProperty(PythonWorkers.PACKAGE_PATH_PROPERTY);
    }

    private static Workload<PythonSource> workload(String spec) {
        PythonWorkers.Hello hello = PythonWorkers.probe(spec, PYTHON);
        PythonDataset d = new PythonDataset(spec, PYTHON, hello.size(), hello.description(), 2);
        return new Workload<>("python", new PythonSamples(d), new PythonTransforms(d));
    }

    private static byte[] bytesOf(Patch p) throws Exception {
        SharedSample s = p.sharedSample();
        assertThat(s.onThisHost()).isTrue();
        byte[] bytes = Files.readAllBytes(Path.of(s.file()));
        Files.delete(Path.of(s.file())); // the training process's part
        assertThat((long) bytes.length).isEqualTo(s.bytes());
        return bytes;
    }

    @Test
    void shouldPrepareTheSameBytesForTheSameIdentityAndOthersForAnotherEpoch() throws Exception {
        Workload<PythonSource> w = workload("datasets:make_volumes");
        assertThat(w.size()).isEqualTo(6);
        Patch first = w.prepare(new SampleKey(7, 0, 2), 4);
        assertThat(first.bytes()).isZero(); // nothing of the sample in the JVM
        assertThat(first.sharedSample().layout()).contains("\"t\":\"tuple\"", "\"<f4\"", "|u1");
        byte[] a = bytesOf(first);
        byte[] again = bytesOf(w.prepare(new SampleKey(7, 0, 2), 4));
        byte[] otherEpoch = bytesOf(w.prepare(new SampleKey(7, 1, 2), 4));
        assertThat(again).isEqualTo(a);
        assertThat(otherEpoch).isNotEqualTo(a).hasSameSizeAs(a);
    }

    @Test
    void shouldStopAndResumeElsewhereFromItsStateWithTheSameResult() throws Exception {
        Workload<PythonSource> w = workload("datasets:make_volumes");
        SampleKey key = new SampleKey(3, 1, 5);
        Steps<PythonSource> cut = w.start(key);
        cut.advance(w.open(1)); // handed to a process, as a fast worker at its deadline leaves it
        Steps<PythonSource> resumed = w.read(UnfinishedSample.bytesOf(cut));
        Patch there = w.finish(resumed, 1);
        Patch here = w.finish(cut, 1);
        assertThat(bytesOf(there)).isEqualTo(bytesOf(here));
        assertThat(cut.outsideCpuNanos()).isPositive();
    }

    @Test
    void shouldNameTheSampleAndTheExceptionOfARaisingGetitem() {
        Workload<PythonSource> w = workload("datasets:make_faulty");
        assertThatThrownBy(() -> w.prepare(new SampleKey(1, 0, 0), 3))
                .isInstanceOf(BadInputException.class)
                .hasMessage(
                        "sample 3 (/data/item_003.bin): __getitem__ raised ValueError: cannot"
                                + " decode item 3");
    }

    @Test
    void shouldRefuseADatasetThatDoesNotImportInOneLine() {
        assertThatThrownBy(() -> PythonWorkers.probe("datasets:no_such_factory", PYTHON))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--dataset datasets:no_such_factory: AttributeError:")
                .hasMessageNotContaining("\n");
    }
}
