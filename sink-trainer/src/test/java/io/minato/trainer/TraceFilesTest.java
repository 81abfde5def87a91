package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceFilesTest {

    @TempDir Path dir;

    @Test
    void shouldMergeDeviceFilesInDeviceOrderUnderOneHeader() throws IOException {
        // Device 10's line is of a run before the steps' times were traced: read as well.
        Files.writeString(TraceFiles.deviceFile(dir, 10), "0,5,1,10,0,slow,2500\n");
        Files.writeString(
                TraceFiles.deviceFile(dir, 2),
                "0,1,0,2,0,fast,1000,5000,5040\n0,2,3,2,0,fast,250,5000,5040\n");
        Files.writeString(TraceFiles.deviceFile(dir, 0), "");
        Files.writeString(dir.resolve("summary-device-0.json"), "{}");
        Path out = dir.resolve("report/trace.csv");

        TraceFiles.merge(dir, out);

        assertThat(Files.readAllLines(out))
                .containsExactly(
                        "epoch,index,case,device,step,path",
                        "0,1,0,2,0,fast",
                        "0,2,3,2,0,fast",
                        "0,5,1,10,0,slow");
        // The per-device column the contract's trace leaves out: preparation CPU microseconds.
        assertThat(TraceFiles.prepMillis(dir)).containsExactlyInAnyOrder(1.0, 0.25, 2.5);
        assertThat(TraceFiles.prepMillisByPath(dir))
                .containsEntry(SamplePath.FAST, List.of(1.0, 0.25))
                .containsEntry(SamplePath.SLOW, List.of(2.5));
        // One step of two samples; the old line has no times.
        assertThat(TraceFiles.stepTimes(dir)).containsExactly(new long[] {5000, 5040});
        try (Stream<Path> left = Files.list(out.getParent())) {
            assertThat(left).as("no temporary file left").containsExactly(out);
        }
    }

    /**
     * The images workload names a sample by its path: quoted where it holds a comma or a quote,
     * UTF-8 as the file system spells it, and the per-device columns still read from the end.
     */
    @Test
    void shouldQuoteAndKeepSampleNamesThatAreImagePaths() throws IOException {
        try (TraceWriter w =
                TraceWriter.open(
                        dir,
                        0,
                        0,
                        i -> List.of("cats/plain.jpg", "dogs/a,b.png", "ünï/\"q\".jpg").get(i))) {
            List<PreparedSample> samples = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                samples.add(
                        new PreparedSample(
                                new SampleTask(1, 0, i, i),
                                SamplePath.FAST,
                                1_000_000L * (i + 1),
                                null));
            }
            w.append(new Batch(0, 0, samples), 4, 1000, 1250);
            w.append(new Batch(0, 1, samples.subList(0, 1)), 5, 1250, 1300);
        }
        Path out = dir.resolve("trace.csv");
        TraceFiles.merge(dir, out);

        assertThat(Files.readAllLines(out, StandardCharsets.UTF_8))
                .containsExactly(
                        TraceFiles.HEADER,
                        "0,0,cats/plain.jpg,0,4,fast",
                        "0,1,\"dogs/a,b.png\",0,4,fast",
                        "0,2,\"ünï/\"\"q\"\".jpg\",0,4,fast",
                        "0,0,cats/plain.jpg,0,5,fast");
        assertThat(TraceFiles.prepMillis(dir)).containsExactly(1.0, 2.0, 3.0, 1.0);
        assertThat(TraceFiles.stepTimes(dir))
                .containsExactly(new long[] {1000, 1250}, new long[] {1250, 1300});
    }

    @Test
    void shouldWriteOnlyTheHeaderWhenNoDeviceTrained() throws IOException {
        Path out = dir.resolve("trace.csv");
        TraceFiles.merge(dir, out);
        assertThat(Files.readString(out)).isEqualTo(TraceFiles.HEADER + "\n");
        assertThat(TraceFiles.prepMillisByPath(dir))
                .containsEntry(SamplePath.FAST, List.of())
                .containsEntry(SamplePath.SLOW, List.of());
    }
}
