package io.minato.job.workload;

import io.minato.job.workload.images.ImagesWorkload;
import io.minato.job.workload.kits19.Kits19Workload;
import java.util.Iterator;
import java.util.List;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The workloads a run can train: the one place a workload is registered. {@code --workload} parses
 * its names here and {@code --help} lists them from here.
 */
public final class Workloads {

    /** The {@code --workload} default. */
    public static final String DEFAULT = Kits19Workload.NAME;

    /** Every workload, in the order {@code --help} lists them. */
    private static final List<JobWorkload> ALL =
            List.of(new Kits19Workload(), new ImagesWorkload());

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
        // picocli's own wording for a value an enum option does not have.
        throw new IllegalArgumentException(
                "expected one of " + names() + " (case-sensitive) but was '" + name + "'");
    }

    private static List<String> names() {
        return ALL.stream().map(JobWorkload::name).toList();
    }

    /** Parses {@code --workload}. */
    public static final class Converter implements ITypeConverter<JobWorkload> {
        @Override
        public JobWorkload convert(String value) {
            try {
                return named(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /** {@code --workload}'s values, for {@code --help} and shell completion. */
    public static final class Names implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return names().iterator();
        }
    }
}
