package io.minato.job.workload.kits19;

import ai.djl.Device;
import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.JobWorkload;
import io.minato.job.workload.TrainingSet;
import io.minato.trainer.kits19.Unet3dNetwork;
import io.minato.trainer.kits19.unet.Unet3d;
import io.minato.workload.kits19.TransformConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** KiTS19-like 3D segmentation: .npy volume pairs, the MLPerf transforms, a 3D-UNet, Dice. */
public final class Kits19Workload implements JobWorkload {

    public static final String NAME = "kits19";

    /** The demo's patch: its volumes (scale 0.25) are at least 32 voxels on every axis. */
    public static final int DEMO_PATCH = 32;

    /** The 3D-UNet's rate, the MLPerf reference's. */
    public static final float LEARNING_RATE = 0.1f;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int defaultEdge() {
        return TransformConfig.DEFAULT_PATCH;
    }

    @Override
    public int demoEdge() {
        return DEMO_PATCH;
    }

    @Override
    public String edgeLine(int edge) {
        return "patch " + edge + "^3";
    }

    @Override
    public void checkForNetwork(DataSpec data) {
        if (data.patchEdge() % Unet3d.PATCH_DIVISOR != 0) {
            throw new IllegalArgumentException(
                    "--patch "
                            + data.patchEdge()
                            + " must be a multiple of "
                            + Unet3d.PATCH_DIVISOR
                            + " for the 3D-UNet");
        }
    }

    @Override
    public List<String> networks() {
        return List.of(Unet3dNetwork.MODEL_NAME);
    }

    @Override
    public float defaultLearningRate() {
        return LEARNING_RATE;
    }

    @Override
    public TrainingSet open(DataSpec data, PrintWriter err) throws IOException, BadInputException {
        return new KitsSet(KitsData.cases(data, err), data);
    }

    @Override
    public Optional<String> refusesEvaluate() {
        return Optional.empty();
    }

    @Override
    public String evaluate(Path model, double width, DataSpec data, Device device, PrintWriter err)
            throws IOException, BadInputException {
        KitsData.Cases cases = KitsData.cases(data, err);
        if (cases.held().isEmpty()) {
            throw new IllegalArgumentException("no held-out cases: give --eval-cases N (N >= 1)");
        }
        RunReport.Dice d =
                Evaluation.evaluate(
                        model,
                        width,
                        data.patchEdge(),
                        cases.held(),
                        device,
                        Evaluation.CaseDone.printingTo(err));
        return String.format(
                Locale.ROOT,
                "Dice %.3f (kidney %.3f, tumour %.3f) on %d held-out case(s) of %s",
                d.mean(),
                d.kidney(),
                d.tumor(),
                d.cases(),
                cases.dir());
    }
}
