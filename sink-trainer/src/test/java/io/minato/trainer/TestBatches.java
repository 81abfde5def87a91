package io.minato.trainer;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.transform.Patch;
import io.minato.transform.Shape3;
import java.util.ArrayList;
import java.util.List;

/** Small batches of 4^3 patches with distinct content, for the sink's tests. */
final class TestBatches {

    static final Shape3 SHAPE = Shape3.cube(4);

    private TestBatches() {}

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
        int n = (int) SHAPE.voxels();
        float[] image = new float[n];
        byte[] label = new byte[n];
        for (int v = 0; v < n; v++) {
            image[v] = index * 1000 + v + 0.5f;
            label[v] = (byte) ((index + v) % 3);
        }
        return new PreparedSample(
                new SampleTask(7, epoch, index, caseIndex),
                path,
                1_000 + index,
                new Patch(SHAPE, image, label));
    }

    /**
     * The lines a device's trace file gets for {@code batch} trained in step {@code step}: the
     * contract's columns plus the preparation CPU microseconds.
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
