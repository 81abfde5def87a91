package io.minato.job.workload.kits19;

import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.DataSplit;
import io.minato.job.workload.HeldOut;
import io.minato.job.workload.TrainingSet;
import io.minato.spi.Workload;
import io.minato.trainer.Network;
import io.minato.trainer.kits19.Unet3dNetwork;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.CaseTable;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import java.util.stream.IntStream;

/** The kits19 workload's cases: a 3D-UNet learns them, Dice scores it on the held-out ones. */
record KitsSet(KitsData.Cases cases, Workload<?> workload, int patch) implements TrainingSet {

    KitsSet(KitsData.Cases cases, DataSpec data) {
        this(
                cases,
                new CaseTable(cases.train(), cases.cache()).workload(data.transformConfig()),
                data.patchEdge());
    }

    @Override
    public DataSplit split() {
        return cases;
    }

    @Override
    public boolean remembers() {
        return cases.cache().enabled();
    }

    @Override
    public String unit() {
        return "cases";
    }

    @Override
    public String heldUnit() {
        return "case(s)";
    }

    @Override
    public Network network(double width, String name) {
        if (!name.equals(Unet3dNetwork.MODEL_NAME)) {
            throw new IllegalArgumentException("kits19 trains the 3D-UNet, not " + name);
        }
        return new Unet3dNetwork(width);
    }

    @Override
    public HeldOut heldOut() {
        return new HeldCases(patch, new CaseTable(cases.held()));
    }

    /**
     * The held-out cases (their files' paths, as the training cases travel), scored by Dice at the
     * training patch's edge.
     */
    record HeldCases(int patch, CaseTable held) implements HeldOut {
        private static final long serialVersionUID = 1L;

        List<CaseFiles> cases() {
            return IntStream.range(0, held.size()).mapToObj(held::files).toList();
        }

        @Override
        public RunReport.Outcome evaluated(
                RunReport.Outcome outcome, Trained trained, PrintWriter err)
                throws IOException, BadInputException {
            RunReport.Dice dice =
                    Evaluation.evaluate(
                            trained.dir(),
                            trained.width(),
                            patch,
                            cases(),
                            trained.device(),
                            Evaluation.CaseDone.printingTo(err));
            return outcome.evaluated(dice, null);
        }
    }
}
