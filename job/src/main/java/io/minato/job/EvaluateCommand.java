package io.minato.job;

import ai.djl.Device;
import io.minato.job.report.RunReport;
import io.minato.job.workload.kits19.Evaluation;
import io.minato.job.workload.kits19.KitsData;
import io.minato.trainer.gpu.DeviceRequest;
import io.minato.trainer.gpu.DeviceSpec;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** Evaluates a saved 3D-UNet on the held-out cases of a dataset and prints its Dice. */
@Command(
        name = "evaluate",
        mixinStandardHelpOptions = true,
        description =
                "Dice of a saved model (a run's model-device-0 folder) on the held-out cases.")
public final class EvaluateCommand implements Callable<Integer> {

    @Mixin DataOptions data = new DataOptions();

    @Option(
            names = "--model",
            paramLabel = "DIR",
            required = true,
            description = "Folder holding unet3d-0000.params.")
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
        KitsData.Cases cases = KitsData.cases(data.spec(), err);
        if (cases.held().isEmpty()) {
            throw new ParameterException(
                    spec.commandLine(), "no held-out cases: give --eval-cases N (N >= 1)");
        }
        RunReport.Dice d =
                Evaluation.evaluate(
                        model,
                        network.width(),
                        data.patchEdge(),
                        cases.held(),
                        on,
                        Evaluation.CaseDone.printingTo(err));
        out.printf(
                Locale.ROOT,
                "Dice %.3f (kidney %.3f, tumour %.3f) on %d held-out case(s) of %s, on %s%n",
                d.mean(),
                d.kidney(),
                d.tumor(),
                d.cases(),
                cases.dir(),
                on.isGpu() ? "gpu" + on.getDeviceId() : "cpu");
        out.flush();
        return 0;
    }
}
