package io.minato.job.workload;

import io.minato.job.workload.images.ImagesWorkload;
import io.minato.job.workload.kits19.Kits19Workload;
import io.minato.job.workload.python.PythonWorkload;
import java.util.List;

/**
 * The workloads a run can train: the one place a workload is registered. {@code --workload} takes
 * its names from here, and {@code --help} lists them.
 */
public final class Workloads {

    /** The {@code --workload} default. */
    public static final String DEFAULT = Kits19Workload.NAME;

    /** Every workload, in the order {@code --help} lists them. */
    private static final List<JobWorkload> ALL =
            List.of(new Kits19Workload(), new ImagesWorkload(), new PythonWorkload());

    private Workloads() {}

    public static List<JobWorkload> all() {
        return ALL;
    }

    /** The workload called {@code name}; an {@link IllegalArgumentException} naming them all. */
    public static JobWorkload named(String name) {
        for (JobWorkload w : ALL) {
            if (w.name().equals(name)) {
                return w;
            }
        }
        // The wording picocli gives a value an enum option does not have.
        throw new IllegalArgumentException(
                "expected one of " + names() + " (case-sensitive) but was '" + name + "'");
    }

    /** Every workload's name, in the order {@code --help} lists them. */
    public static List<String> names() {
        return ALL.stream().map(JobWorkload::name).toList();
    }
}
