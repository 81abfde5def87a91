package io.minato.job.workload.kits19;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.minato.data.BadInputException;
import io.minato.job.report.RunReport.Dice;
import io.minato.trainer.ConvolutionCheck;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.TorchThreads;
import io.minato.trainer.kits19.unet.SlidingWindow;
import io.minato.trainer.kits19.unet.Unet3d;
import io.minato.workload.kits19.CaseCheck;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.Volume;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Mean Dice of a saved 3D-UNet over held-out cases, by sliding-window inference on each volume, on
 * the device given (a run evaluates on its first training device).
 */
public final class Evaluation {
    /** Windows per forward pass: enough to amortise the call, small enough for the CPU cache. */
    private static final int WINDOWS_PER_FORWARD = 4;

    private Evaluation() {}

    /** Told each case's Dice as soon as it is evaluated. */
    @FunctionalInterface
    public interface CaseDone {
        void evaluated(String caseName, double kidney, double tumor, long nanos);

        /** One line a case on {@code out}: evaluations of big cases take a while each. */
        static CaseDone printingTo(java.io.PrintWriter out) {
            return (name, kidney, tumor, nanos) -> {
                out.printf(
                        java.util.Locale.ROOT,
                        "evaluated %s: kidney %.3f, tumour %.3f (%.1f s)%n",
                        name,
                        kidney,
                        tumor,
                        nanos / 1e9);
                out.flush();
            };
        }
    }

    public static Dice evaluate(
            Path modelDir, double width, int patch, List<CaseFiles> cases, Device device)
            throws IOException, BadInputException {
        return evaluate(modelDir, width, patch, cases, device, (name, k, t, nanos) -> {});
    }

    public static Dice evaluate(
            Path modelDir,
            double width,
            int patch,
            List<CaseFiles> cases,
            Device device,
            CaseDone done)
            throws IOException, BadInputException {
        if (!Files.isRegularFile(modelDir.resolve(DjlAccelerator.MODEL_NAME + "-0000.params"))) {
            throw new BadInputException(
                    modelDir,
                    "no saved model "
                            + DjlAccelerator.MODEL_NAME
                            + "-0000.params; give --model a run's model-device-0 folder");
        }
        double kidney = 0;
        double tumor = 0;
        TorchThreads.useAllCores();
        if (!device.isGpu()) {
            ConvolutionCheck.requireOnCpu(3);
        }
        try (Model model = Model.newInstance(DjlAccelerator.MODEL_NAME, device);
                NDManager manager = NDManager.newBaseManager(device)) {
            model.setBlock(Unet3d.builder().optWidth(width).build());
            try {
                model.load(modelDir, DjlAccelerator.MODEL_NAME);
                // DJL loads parameters of another width without a word; a forward pass of one
                // empty window finds the mismatch before any case is read.
                try (NDManager probe = manager.newSubManager()) {
                    model.getBlock()
                            .forward(
                                    new ParameterStore(probe, false),
                                    new NDList(probe.zeros(new Shape(1, 1, patch, patch, patch))),
                                    false);
                }
            } catch (MalformedModelException | EngineException e) {
                throw new BadInputException(
                        modelDir,
                        "cannot use the model ("
                                + e.getMessage()
                                + "); is --width the one it was trained with?",
                        e);
            }
            SlidingWindow window = new SlidingWindow(model.getBlock(), patch, WINDOWS_PER_FORWARD);
            for (CaseFiles c : cases) {
                long start = System.nanoTime();
                // Straight from the mapped volume: no whole-volume copy.
                Volume v = CaseCheck.open(c);
                byte[] predicted = window.predict(manager, v.image(), v.shape());
                double k = SlidingWindow.dice(predicted, v.label(), 1);
                double t = SlidingWindow.dice(predicted, v.label(), 2);
                kidney += k;
                tumor += t;
                done.evaluated(c.name(), k, t, System.nanoTime() - start);
            }
        }
        int n = cases.size();
        return new Dice((kidney + tumor) / (2 * n), kidney / n, tumor / n, n);
    }
}
