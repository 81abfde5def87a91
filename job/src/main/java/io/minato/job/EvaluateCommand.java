package io.minato.job;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
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

    @Option(
            names = "--width",
            paramLabel = "X",
            description = "The width the model was trained with (default: ${DEFAULT-VALUE}).")
    double width = TrainCommand.DEFAULT_WIDTH;

    @Spec CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        DataOptions.Cases cases = data.cases(spec.commandLine().getErr());
        if (cases.held().isEmpty()) {
            throw new picocli.CommandLine.ParameterException(
                    spec.commandLine(), "no held-out cases: give --eval-cases N (N >= 1)");
        }
        Evaluation.Dice d = Evaluation.evaluate(model, width, data.patchEdge(), cases.held());
        out.printf(
                Locale.ROOT,
                "Dice %.3f (kidney %.3f, tumour %.3f) on %d held-out case(s) of %s%n",
                d.mean(),
                d.kidney(),
                d.tumor(),
                d.cases(),
                cases.dir());
        out.flush();
        return 0;
    }
}
