package io.minato.job.workload.python;

import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.DataSplit;
import io.minato.job.workload.HeldOut;
import io.minato.job.workload.JobWorkload;
import io.minato.job.workload.TrainingSet;
import io.minato.spi.Workload;
import io.minato.trainer.Network;
import io.minato.workload.python.PythonDataset;
import io.minato.workload.python.PythonSamples;
import io.minato.workload.python.PythonTransforms;
import io.minato.workload.python.PythonWorkers;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/**
 * A user's own PyTorch Dataset ({@code --dataset MODULE:CALLABLE}), prepared by the job's Python
 * worker processes and trained on by a PyTorch script ({@code --accelerator serve}): the model, its
 * loss and its evaluation are the script's.
 */
public final class PythonWorkload implements JobWorkload {

    public static final String NAME = "python";

    /** What {@code --network} names here: whatever the training script trains. */
    static final String SCRIPTS_MODEL = "script";

    @Override
    public String name() {
        return NAME;
    }

    /** A Python sample has no edge: what {@code __getitem__} returns is the sample. */
    @Override
    public int defaultEdge() {
        return 1;
    }

    @Override
    public int demoEdge() {
        return 1;
    }

    @Override
    public String edgeLine(int edge) {
        return "samples as __getitem__ returns them";
    }

    @Override
    public void check(DataSpec data) {
        if (data.python() == null) {
            throw new IllegalArgumentException(
                    "--workload python takes --dataset MODULE:CALLABLE (or a file the Python"
                            + " package pickled a Dataset into)");
        }
        if (data.data() != null || data.tail() != null || data.cases() != null) {
            throw new IllegalArgumentException(
                    "--workload python reads what its --dataset reads: leave out --data, --cases"
                            + " and --tail");
        }
    }

    @Override
    public boolean servedOnly() {
        return true;
    }

    @Override
    public List<String> networks() {
        return List.of(SCRIPTS_MODEL);
    }

    @Override
    public float defaultLearningRate() {
        return 0;
    }

    /** Asks a worker process for the dataset's length: a dataset that does not load stops here. */
    @Override
    public TrainingSet open(DataSpec data, PrintWriter err) {
        DataSpec.Python py = data.python();
        PythonWorkers.Hello hello = PythonWorkers.probe(py.dataset(), py.interpreter());
        err.println(
                "dataset "
                        + py.dataset()
                        + ": "
                        + hello.size()
                        + " samples, "
                        + hello.description());
        return new PythonSet(
                new PythonDataset(
                        py.dataset(),
                        py.interpreter(),
                        hello.size(),
                        hello.description(),
                        py.processes()));
    }

    /** The dataset's samples, every one trained on: the script holds out what it evaluates. */
    record PythonSet(PythonDataset dataset) implements TrainingSet {

        @Override
        public Workload<?> workload() {
            return new Workload<>(NAME, new PythonSamples(dataset), new PythonTransforms(dataset));
        }

        @Override
        public DataSplit split() {
            return new Split(dataset.size());
        }

        @Override
        public boolean remembers() {
            return false;
        }

        @Override
        public String unit() {
            return "samples of " + dataset.spec();
        }

        @Override
        public String heldUnit() {
            return "sample(s)";
        }

        @Override
        public Network network(double width, String name) {
            throw new IllegalStateException("a Python dataset trains in its PyTorch script");
        }

        @Override
        public HeldOut heldOut() {
            return (outcome, trained, out) -> outcome;
        }
    }

    /** Every sample trains; nothing is held out or left out before the run. */
    record Split(int total) implements DataSplit {
        @Override
        public Path dir() {
            return Path.of("").toAbsolutePath();
        }

        @Override
        public int eval() {
            return 0;
        }

        @Override
        public List<?> held() {
            return List.of();
        }

        @Override
        public List<RunReport.Quarantine> quarantine() {
            return List.of();
        }
    }
}
