package io.minato.job.profile;

import io.minato.job.BatchOptions;
import io.minato.job.ModelOptions;
import io.minato.job.OptimizerOptions;
import io.minato.job.workload.kits19.Kits19Workload;
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
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Times the real training step (forward, backward, SGD update on the device) of the 3D-UNet of
 * {@code --width} and train's optimizer options per batch, for each patch asked, on synthetic
 * batches: what the accelerator costs, without the loader.
 */
@Command(
        name = "step-time",
        mixinStandardHelpOptions = true,
        description = "Time the real 3D-UNet training step per batch on the CPU for patches.")
public final class StepTimeCommand implements Callable<Integer> {

    @Mixin ModelOptions model = new ModelOptions();

    @Mixin OptimizerOptions optimizer = new OptimizerOptions();

    @Option(
            names = "--patch",
            split = ",",
            paramLabel = "P",
            description = "Patch edges, multiples of 32 (default: 32,64).")
    int[] patches = {32, 64};

    @Mixin BatchOptions batch = new BatchOptions();

    @Option(
            names = "--repeats",
            paramLabel = "N",
            description = "Timed steps after one untimed warm-up step (default: ${DEFAULT-VALUE}).")
    int repeats = 3;

    @Spec CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (repeats < 1) {
            throw new ParameterException(spec.commandLine(), "--repeats must be >= 1");
        }
        for (int p : patches) {
            if (p < Unet3d.PATCH_DIVISOR || p % Unet3d.PATCH_DIVISOR != 0) {
                throw new ParameterException(
                        spec.commandLine(),
                        "--patch " + p + " must be a multiple of " + Unet3d.PATCH_DIVISOR);
            }
        }
        TrainingSettings settings;
        try {
            settings = optimizer.settings(model.width(), Kits19Workload.LEARNING_RATE, 1);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
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
        {
            for (int patch : patches) {
                long[] ms = time(settings, patch);
                Arrays.sort(ms);
                out.printf(
                        Locale.ROOT,
                        "%-6s %-6d %-6d %10d %10d %10d%n",
                        model.width(),
                        patch,
                        batch.batch(),
                        ms[ms.length / 2],
                        ms[0],
                        ms[ms.length - 1]);
                out.flush();
            }
        }
        return 0;
    }

    private long[] time(TrainingSettings settings, int patch) throws Exception {
        Batch b = syntheticBatch(patch);
        long[] ms = new long[repeats];
        try (DjlAccelerator trainer = new DjlAccelerator(settings)) {
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
    private Batch syntheticBatch(int patch) {
        Shape3 s = Shape3.cube(patch);
        int n = (int) s.voxels();
        List<PreparedSample> samples = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < batch.batch(); i++) {
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
