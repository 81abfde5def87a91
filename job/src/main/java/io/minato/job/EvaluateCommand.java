package io.minato.job;

import ai.djl.Device;
import io.minato.trainer.gpu.DeviceRequest;
import io.minato.trainer.gpu.DeviceSpec;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Scores a saved model on the held-out samples of a dataset: a 3D-UNet's Dice, an image
 * classifier's top-1 accuracy.
 */
@Command(
        name = "evaluate",
        mixinStandardHelpOptions = true,
        description =
                "Score of a saved model (a run's model-device-0 folder) on the held-out samples:"
                        + " Dice for kits19, top-1 accuracy for images.")
public final class EvaluateCommand implements Callable<Integer> {

    @Mixin DataOptions data = new DataOptions();

    @Option(
            names = "--model",
            paramLabel = "DIR",
            required = true,
            description =
                    "Folder holding the saved parameters: unet3d-0000.params (kits19),"
                            + " cnn2d-0000.params or resnet18-0000.params (images).")
    Path model;

    @Mixin ModelOptions network = new ModelOptions();

    @Option(
            names = "--devices",
            paramLabel = "SPEC",
            description =
                    "Where to run the model, as train's --devices: cpu, gpu (the first GPU) or"
                            + " gpu:I (also gpuI); the first of a list. Default: the first GPU if"
                            + " there is one, else cpu.",
            converter = TrainCommand.DevicesConverter.class)
    DeviceRequest devices = DeviceRequest.parse(null);

    @Spec CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Optional<String> refused = data.workload.refusesEvaluate();
        if (refused.isPresent()) {
            throw new ParameterException(spec.commandLine(), refused.get());
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Device on;
        try {
            DeviceSpec dev = DeviceSpec.resolve(devices);
            dev.fallbackNotice().ifPresent(err::println);
            dev = RunPlan.withTorchDevices(dev, err);
            on = DeviceSpec.djlDevice(dev.devices().get(0));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        String score;
        try {
            score = data.workload.evaluate(model, network.width(), data.spec(), on, err);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        out.println(score + ", on " + (on.isGpu() ? "gpu" + on.getDeviceId() : "cpu"));
        out.flush();
        return 0;
    }
}
