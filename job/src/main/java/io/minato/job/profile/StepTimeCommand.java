package io.minato.job.profile;

import ai.djl.Device;
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
import io.minato.trainer.Precision;
import io.minato.trainer.StepProfile;
import io.minato.trainer.StepProfile.Phase;
import io.minato.trainer.TrainingSettings;
import io.minato.trainer.gpu.DeviceSpec;
import io.minato.trainer.kits19.unet.Unet3d;
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
 * batches: what the accelerator costs, without the loader. Each step's time is split into its
 * phases (copy, forward, backward, update; {@link StepProfile}), with the peak memory, on the CPU
 * or a GPU, in the precision {@code --precision} gives there.
 */
@Command(
        name = "step-time",
        mixinStandardHelpOptions = true,
        description =
                "Time the real 3D-UNet training step per batch for patches, phase by phase, with"
                        + " its peak memory, on the CPU or a GPU.")
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

    @Option(
            names = "--device",
            paramLabel = "D",
            description =
                    "cpu, or gpu[:N] (GPU N as libtorch numbers them, 0 by default) (default:"
                            + " ${DEFAULT-VALUE}).")
    String deviceName = "cpu";

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
        Device device = device();
        Precision precision = settings.precision().forDevice(device.isGpu());
        PrintWriter out = spec.commandLine().getOut();
        out.printf(
                Locale.ROOT,
                "%-6s %-6s %-6s %10s %10s %10s %8s %8s %8s %8s %8s %9s%n",
                "width",
                "patch",
                "batch",
                "median ms",
                "min ms",
                "max ms",
                "copy",
                "forward",
                "backward",
                "update",
                "peak MB",
                "precision");
        out.flush();
        for (int patch : patches) {
            Timed timed = time(settings, device, patch);
            long[] ms = timed.ms();
            StepProfile profile = timed.profile();
            Arrays.sort(ms);
            out.printf(
                    Locale.ROOT,
                    "%-6s %-6d %-6d %10d %10d %10d %8.1f %8.1f %8.1f %8.1f %8d %9s%n",
                    model.width(),
                    patch,
                    batch.batch(),
                    ms[ms.length / 2],
                    ms[0],
                    ms[ms.length - 1],
                    profile.medianMillis(Phase.COPY),
                    profile.medianMillis(Phase.FORWARD),
                    profile.medianMillis(Phase.BACKWARD),
                    profile.medianMillis(Phase.UPDATE),
                    profile.peakBytes() >> 20,
                    precision.label());
            out.flush();
        }
        return 0;
    }

    /** The device {@code --device} names, checked to be here. */
    private Device device() {
        if (deviceName.equals("cpu")) {
            return Device.cpu();
        }
        if (!deviceName.matches("gpu(:\\d{1,4})?")) {
            throw new ParameterException(
                    spec.commandLine(), "--device " + deviceName + ": expected cpu, gpu or gpu:N");
        }
        int index = deviceName.equals("gpu") ? 0 : Integer.parseInt(deviceName.substring(4));
        int gpus = DeviceSpec.torchGpus();
        if (index >= gpus) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--device "
                            + deviceName
                            + ": libtorch sees "
                            + gpus
                            + " GPU(s) here"
                            + (gpus == 0 ? " (a CPU-only build, or no CUDA device)" : ""));
        }
        return Device.gpu(index);
    }

    /** Each timed step's wall time in ms, and the profile of their phases. */
    private record Timed(long[] ms, StepProfile profile) {}

    private Timed time(TrainingSettings settings, Device device, int patch) throws Exception {
        Batch b = syntheticBatch(patch);
        long[] ms = new long[repeats];
        StepProfile profile;
        try (DjlAccelerator trainer = new DjlAccelerator(settings, device)) {
            trainer.train(b); // libtorch's and the JIT's first-time costs
            profile = new StepProfile(device); // the peak counts from here
            trainer.profile(profile);
            for (int i = 0; i < repeats; i++) {
                long start = System.nanoTime();
                trainer.train(b);
                ms[i] = (System.nanoTime() - start) / 1_000_000;
            }
        }
        return new Timed(ms, profile);
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
