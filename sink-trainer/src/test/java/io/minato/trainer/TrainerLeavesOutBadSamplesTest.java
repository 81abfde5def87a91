package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.data.BadInputException;
import io.minato.loader.SampleRecipe;
import io.minato.npy.NpyWriter;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.TransformConfig;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sample a trainer prepares again (it arrived as an identity, as after a restore) whose case file
 * went bad meanwhile: under {@code --on-bad-sample skip} it is left out and its source quarantined
 * once, later samples of that source are left out unprepared, a batch left with none takes no step
 * (a replica's joins the others' step empty-handed), and every other sample trains; without it the
 * step fails naming the file.
 */
class TrainerLeavesOutBadSamplesTest {
    @TempDir Path tmp;

    private SampleRecipe recipe;
    private Path badImage;

    @BeforeEach
    void writeTwoCasesAndTruncateOne() throws IOException {
        long[] shape = {1, 6, 7, 8};
        int n = 6 * 7 * 8;
        List<CaseFiles> cases = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            float[] image = new float[n];
            byte[] label = new byte[n];
            for (int v = 0; v < n; v++) {
                image[v] = c * 1000 + v + 0.5f;
                label[v] = (byte) ((c + v) % 7 == 0 ? 1 : 0);
            }
            Path x = tmp.resolve(String.format("case_%05d_x.npy", c));
            Path y = tmp.resolve(String.format("case_%05d_y.npy", c));
            NpyWriter.writeFloat32(x, shape, image);
            NpyWriter.writeUint8(y, shape, label);
            cases.add(new CaseFiles(String.format("case_%05d", c), x, y));
        }
        recipe = new SampleRecipe(new CaseTable(cases).workload(TransformConfig.mlperf(4)));
        badImage = tmp.resolve("case_00001_x.npy");
        try (FileChannel ch = FileChannel.open(badImage, StandardOpenOption.WRITE)) {
            ch.truncate(200);
        }
    }

    /** Sample (epoch 0, index) of case {@code caseIndex}, as an identity without its patch. */
    private static PreparedSample identity(long index, int caseIndex) {
        return new PreparedSample(new SampleTask(7, 0, index, caseIndex), SamplePath.FAST, 0, null);
    }

    private TrainerSinkWriter writer() throws IOException {
        TrainerSink sink =
                TrainerSink.builder()
                        .setAccelerator(new SimulatedAccelerator.Factory(1))
                        .optTraceDir(tmp.resolve("trace"))
                        .optRecipe(recipe)
                        .optSkipBadSamples(true)
                        .build();
        return new FakeTrainerContext(0, 1).trainer(sink);
    }

    @Test
    void shouldLeaveOutSamplesOfABadSourceAndTrainTheRest() throws Exception {
        List<String> quarantined = new ArrayList<>();
        Set<Long> skipped = new HashSet<>();
        int[] skips = {0};
        TrainerSinkWriter w = writer();
        w.account()
                .leaveOutBadSamples(
                        new SampleRecipe.LeftOut() {
                            @Override
                            public boolean quarantined(SampleTask task) {
                                return !quarantined.isEmpty() && task.caseIndex() == 1;
                            }

                            @Override
                            public void quarantine(SampleTask task, BadInputException bad) {
                                quarantined.add(bad.file().getFileName().toString());
                                skipped.add(task.index());
                            }

                            @Override
                            public void skip() {
                                skips[0]++;
                            }
                        });
        try {
            w.write(new Batch(0, 0, List.of(identity(0, 0), identity(1, 1))));
            w.write(new Batch(0, 1, List.of(identity(2, 1), identity(3, 1))));
            w.write(new Batch(0, 2, List.of(identity(4, 0))));
            w.endInput();

            assertThat(quarantined).containsExactly("case_00001_x.npy");
            assertThat(skipped).containsExactly(1L);
            assertThat(skips[0])
                    .as("samples of the quarantined source left out unprepared")
                    .isEqualTo(2);
            assertThat(w.counters().steps())
                    .as("the batch left with none took no step")
                    .isEqualTo(2);
            assertThat(w.counters().samples()).isEqualTo(2);
            assertThat(Files.readAllLines(TraceFiles.deviceFile(tmp.resolve("trace"), 0)))
                    .extracting(l -> l.split(",")[1] + "@" + l.split(",")[4])
                    .containsExactly("0@0", "4@1");
        } finally {
            w.close();
        }
    }

    /**
     * Data-parallel replicas: every sample of device 1's batch went bad, so it joins device 0's
     * steps with no sample of its own, and a step no replica had a sample for (both batches bad) is
     * counted by both and ends nothing, until both inputs ended.
     */
    @Test
    void shouldLetAReplicaWhoseBatchWentBadJoinTheOthersStepsEmptyHanded() throws Exception {
        TrainerSink sink =
                TrainerSink.builder()
                        .setAccelerator((device, devices) -> new LockstepAccelerator())
                        .optRecipe(recipe)
                        .optSkipBadSamples(true)
                        .build();
        JobID job = new JobID();
        TrainerSinkWriter w0 = new FakeTrainerContext(0, 2, job).trainer(sink);
        TrainerSinkWriter w1 = new FakeTrainerContext(1, 2, job).trainer(sink);
        try {
            w0.account().leaveOutBadSamples(new InMemoryQuarantine());
            w1.account().leaveOutBadSamples(new InMemoryQuarantine());
            FutureTask<Void> device0 =
                    task(
                            () -> {
                                w0.write(new Batch(0, 0, List.of(identity(0, 0), identity(2, 0))));
                                w0.write(new Batch(0, 1, List.of(identity(5, 1))));
                                w0.write(new Batch(0, 2, List.of(identity(4, 0))));
                                w0.endInput();
                                return null;
                            });
            FutureTask<Void> device1 =
                    task(
                            () -> {
                                w1.write(new Batch(1, 0, List.of(identity(1, 1), identity(3, 1))));
                                w1.write(new Batch(1, 1, List.of(identity(7, 1))));
                                w1.endInput();
                                return null;
                            });
            device0.get(60, TimeUnit.SECONDS);
            device1.get(60, TimeUnit.SECONDS);

            assertThat(w0.counters().steps()).isEqualTo(2);
            assertThat(w0.counters().samples()).isEqualTo(3);
            assertThat(w1.counters().steps()).isZero();
        } finally {
            w0.close();
            w1.close();
        }
    }

    private static FutureTask<Void> task(Callable<Void> body) {
        FutureTask<Void> task = new FutureTask<>(body);
        new Thread(task).start();
        return task;
    }

    /** A writer's own quarantine, as its operator state would hold it. */
    private static final class InMemoryQuarantine implements SampleRecipe.LeftOut {
        private final Set<Integer> cases = new HashSet<>();

        @Override
        public boolean quarantined(SampleTask task) {
            return cases.contains(task.caseIndex());
        }

        @Override
        public void quarantine(SampleTask task, BadInputException bad) {
            cases.add(task.caseIndex());
        }

        @Override
        public void skip() {}
    }

    @Test
    void shouldFailTheStepNamingTheFileWithoutSkip() throws Exception {
        TrainerSinkWriter w = writer();
        try {
            w.write(new Batch(0, 0, List.of(identity(0, 0), identity(1, 1))));
            assertThatThrownBy(() -> w.endInput())
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("case_00001_x.npy");
        } finally {
            w.close();
        }
    }
}
