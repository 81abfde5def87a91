package io.minato.job.workload;

import ai.djl.Device;
import io.minato.job.report.RunReport;
import io.minato.spi.Workload;
import io.minato.trainer.Network;
import java.nio.file.Path;
import java.util.List;

/**
 * What a run trains on, whichever the workload: the training samples as a {@link Workload}, the
 * counts the report and the start line give, what was left out, the network that learns them and
 * how the trained one is scored on the held-out samples. One implementation per workload, which its
 * {@link JobWorkload#open} returns.
 */
public interface TrainingSet {

    Workload<?> workload();

    /** The data folder as the run found it. */
    DataSplit split();

    /** Samples in the data folder, bad ones included. */
    default int total() {
        return split().total();
    }

    /** Samples held out for evaluation, as asked. */
    default int eval() {
        return split().eval();
    }

    /** Held-out samples the evaluation scores. */
    default int held() {
        return split().held().size();
    }

    /** Inputs left out as bad before the run. */
    default List<RunReport.Quarantine> quarantine() {
        return split().quarantine();
    }

    /** The data folder. */
    default Path dir() {
        return split().dir();
    }

    /**
     * Whether the workload remembers what depends on a sample's files alone (the report's cache).
     */
    boolean remembers();

    /** What the start line calls the samples. */
    String unit();

    /** What the evaluation line calls a held-out sample: "case(s)", "image(s)". */
    String heldUnit();

    /**
     * The network {@code name} (one of its workload's {@link JobWorkload#networks()}) of {@code
     * width}, to learn this set.
     */
    Network network(double width, String name);

    /** How a model trained on this set is scored on its held-out samples. */
    HeldOut heldOut();

    /**
     * A model as a run trained it: saved in {@code dir}, trained as {@code network} of {@code
     * width}, scored on {@code device}.
     */
    record Trained(Path dir, Network network, double width, Device device) {}

    /** Samples per epoch. */
    default int train() {
        return workload().size();
    }
}
