package io.minato.trainer;

import io.minato.loader.SampleRecipe;
import io.minato.npy.NpyWriter;
import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.Preparation;
import io.minato.workload.kits19.TransformConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Small batches of 4^3 patches, prepared for real from five tiny cases on disk, so that {@link
 * #RECIPE} prepares a sample restored as an identity to the same bytes again.
 */
final class TestBatches {

    static final Shape3 SHAPE = Shape3.cube(4);

    static final TransformConfig CONFIG = TransformConfig.mlperf(4);

    private static final CaseTable CASES = writeCases();

    /** Prepares any sample of these batches from its identity. */
    static final SampleRecipe RECIPE = new SampleRecipe(CASES.workload(CONFIG));

    private TestBatches() {}

    private static CaseTable writeCases() {
        try {
            Path dir = Files.createTempDirectory("test-batches");
            dir.toFile().deleteOnExit();
            long[] shape = {1, 6, 7, 8};
            int n = 6 * 7 * 8;
            List<CaseFiles> cases = new ArrayList<>();
            for (int c = 0; c < 5; c++) {
                float[] image = new float[n];
                byte[] label = new byte[n];
                for (int v = 0; v < n; v++) {
                    image[v] = c * 1000 + v + 0.5f;
                    label[v] = (byte) ((c + v) % 7 == 0 ? 1 + v % 2 : 0);
                }
                Path x = dir.resolve(String.format("case_%05d_x.npy", c));
                Path y = dir.resolve(String.format("case_%05d_y.npy", c));
                NpyWriter.writeFloat32(x, shape, image);
                NpyWriter.writeUint8(y, shape, label);
                x.toFile().deleteOnExit();
                y.toFile().deleteOnExit();
                cases.add(new CaseFiles(String.format("case_%05d", c), x, y));
            }
            return new CaseTable(cases);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Batch {@code sequence} of {@code device}: samples (epoch 0, index sequence*size + i). */
    static Batch batch(int device, long sequence, SamplePath... paths) {
        List<PreparedSample> samples = new ArrayList<>();
        for (int i = 0; i < paths.length; i++) {
            long index = sequence * paths.length + i;
            samples.add(sample(0, index, (int) (index % 5), paths[i]));
        }
        return new Batch(device, sequence, samples);
    }

    /** A two-sample batch, one fast one slow. */
    static Batch batch(int device, long sequence) {
        return batch(device, sequence, SamplePath.FAST, SamplePath.SLOW);
    }

    static PreparedSample sample(int epoch, long index, int caseIndex, SamplePath path) {
        SampleTask task = new SampleTask(7, epoch, index, caseIndex);
        Patch patch;
        try {
            patch = Preparation.prepare(task.key(), CASES.volume(caseIndex), CONFIG);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return new PreparedSample(task, path, 1_000 + index, patch);
    }

    /**
     * The lines a device's trace file gets for {@code batch} trained in step {@code step}: the
     * contract's columns plus the preparation CPU microseconds (then the step's start and end
     * millis, which these leave out).
     */
    static List<String> traceLines(Batch batch, long step) {
        List<String> lines = new ArrayList<>();
        for (PreparedSample s : batch.samples()) {
            SampleTask t = s.task();
            lines.add(
                    t.epoch()
                            + ","
                            + t.index()
                            + ","
                            + t.caseIndex()
                            + ","
                            + batch.device()
                            + ","
                            + step
                            + ","
                            + s.path().csv()
                            + ","
                            + s.prepCpuNanos() / 1000);
        }
        return lines;
    }
}
