package io.minato.job.profile;

import io.minato.sample.Batch;
import io.minato.sample.PreparedSample;
import io.minato.sample.SamplePath;
import io.minato.sample.SampleTask;
import io.minato.spi.Patch;
import io.minato.spi.Shape3;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.TrainingSettings;
import io.minato.workload.kits19.unet.Unet3d;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Times the real training step (forward, backward, SGD update on the device) of the 3D-UNet per
 * batch, for each width and patch asked, on synthetic batches: what the accelerator costs, without
 * the loader.
 */
@Command(
        name = "step-time",
        mixinStandardHelpOptions = true,
        description =
                "Time the real 3D-UNet training step per batch on the CPU for widths and patches.")
public final class StepTimeCommand implements Callable<Integer> {

    @Option(
            names = "--width",
            split = ",",
            paramLabel = "X",
            description = "Model widths, 1.0 = MLPerf's filters (default: 0.25,1.0).")
    double[] widths = {0.25, 1.0};

    @Option(
            names = "--patch",
            split = ",",
            paramLabel = "P",
            description = "Patch edges, multiples of 32 (default: 32,64).")
    int[] patches = {32, 64};

    @Option(
            names = "--batch",
            paramLabel = "B",
            description = "Samples per batch (default: ${DEFAULT-VALUE}).")
    int batch = 2;

    @Option(
            names = "--repeats",
            paramLabel = "N",
            description = "Timed steps after one untimed warm-up step (default: ${DEFAULT-VALUE}).")
    int repeats = 3;

    @Spec CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (batch < 1 || repeats < 1) {
            throw new ParameterException(spec.commandLine(), "--batch and --repeats must be >= 1");
        }
        for (int p : patches) {
            if (p < Unet3d.PATCH_DIVISOR || p % Unet3d.PATCH_DIVISOR != 0) {
                throw new ParameterException(
                        spec.commandLine(),
                        "--patch " + p + " must be a multiple of " + Unet3d.PATCH_DIVISOR);
            }
        }
        for (double w : widths) {
            if (!(w > 0)) {
                throw new ParameterException(spec.commandLine(), "--width must be > 0: " + w);
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        out.printf(
                Locale.ROOT,
                "%-6s %-6s %-6s %10s %10s %10s%n",
                "width",
                "patch",
                "batch",
                "median ms",
                "min ms",
                "max ms");
        out.flush();
        for (double width : widths) {
            for (int patch : patches) {
                long[] ms = time(width, patch);
                Arrays.sort(ms);
                out.printf(
                        Locale.ROOT,
                        "%-6s %-6d %-6d %10d %10d %10d%n",
                        width,
                        patch,
                        batch,
                        ms[ms.length / 2],
                        ms[0],
                        ms[ms.length - 1]);
                out.flush();
            }
        }
        return 0;
    }

    private long[] time(double width, int patch) throws Exception {
        Batch b = batch(patch);
        long[] ms = new long[repeats];
        try (DjlAccelerator trainer =
                new DjlAccelerator(
                        TrainingSettings.builder()
                                .setWidth(width)
                                .setLearningRate(0.01f)
                                .optMomentum(0.9f)
                                .setSeed(1)
                                .build())) {
            trainer.train(b); // libtorch's and the JIT's first-time costs
            for (int i = 0; i < repeats; i++) {
                long start = System.nanoTime();
                trainer.train(b);
                ms[i] = (System.nanoTime() - start) / 1_000_000;
            }
        }
        return ms;
    }

    /** Noise images with a labelled kidney-and-tumour block. */
    private Batch batch(int patch) {
        Shape3 s = Shape3.cube(patch);
        int n = (int) s.voxels();
        List<PreparedSample> samples = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < batch; i++) {
            float[] image = new float[n];
            byte[] label = new byte[n];
            for (int v = 0; v < n; v++) {
                int z = v / (patch * patch);
                boolean inside = z >= patch / 4 && z < 3 * patch / 4;
                label[v] = (byte) (inside ? (v % 5 == 0 ? 2 : 1) : 0);
                image[v] = (inside ? 1f : -1f) + (float) random.nextGaussian() * 0.3f;
            }
            samples.add(
                    new PreparedSample(
                            new SampleTask(1, 0, i, 0),
                            SamplePath.FAST,
                            0,
                            new Patch(s, image, label)));
        }
        return new Batch(0, 0, samples);
    }
}
