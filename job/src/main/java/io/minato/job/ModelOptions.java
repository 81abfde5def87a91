package io.minato.job;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The network's size: shared by train, evaluate and step-time, checked as it is given. */
public final class ModelOptions {

    /** 0.125 cannot tell tumour from kidney on the synthetic data; 0.25 can. */
    public static final double DEFAULT_WIDTH = 0.25;

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    private double width = DEFAULT_WIDTH;

    @Option(
            names = "--width",
            paramLabel = "X",
            description =
                    "Model width: for the 3D-UNet 1.0 is MLPerf's 32-64-128-256-320 filters; for"
                            + " the image classifier 1.0 is 16-32-64; a saved model's is the"
                            + " width it was trained with (default: "
                            + DEFAULT_WIDTH
                            + ").")
    void setWidth(double value) {
        if (!(value > 0)) {
            throw new ParameterException(spec.commandLine(), "--width must be > 0: " + value);
        }
        width = value;
    }

    public double width() {
        return width;
    }
}
