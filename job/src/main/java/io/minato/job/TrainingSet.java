package io.minato.job;

import io.minato.data.CaseCache;
import io.minato.job.report.RunReport;
import io.minato.loader.CaseTable;
import io.minato.spi.Workload;
import java.util.List;

/**
 * What a run trains on, whichever the workload: the training samples as a {@link Workload}, the
 * counts the report and the start line give, what was left out, and the held-out part for the
 * evaluation after training ({@code cases} for kits19, {@code images} for images; the other null).
 */
record TrainingSet(
        Workload<?> workload,
        int total,
        int eval,
        List<RunReport.Quarantine> quarantine,
        CaseCache cache,
        DataOptions.Cases cases,
        ImageData.Images images) {

    /** The samples {@code data} names, checked; bad input stops here (or is left out, skip). */
    static TrainingSet load(DataOptions data, java.io.PrintWriter err)
            throws java.io.IOException, io.minato.data.BadInputException {
        return data.images() ? of(ImageData.images(data, err)) : of(data.cases(err), data);
    }

    static TrainingSet of(DataOptions.Cases cases, DataOptions data) {
        return new TrainingSet(
                new CaseTable(cases.train(), cases.cache()).workload(data.transformConfig()),
                cases.total(),
                cases.eval(),
                cases.quarantine(),
                cases.cache(),
                cases,
                null);
    }

    static TrainingSet of(ImageData.Images images) {
        return new TrainingSet(
                images.workload(),
                images.total(),
                images.eval(),
                images.quarantine(),
                CaseCache.disabled(),
                null,
                images);
    }

    /**
     * Whether the workload remembers what depends on a sample's files alone (the report's cache).
     */
    boolean remembers() {
        return images != null ? images.remembers() : cache.enabled();
    }

    /** The data folder. */
    java.nio.file.Path dir() {
        return cases != null ? cases.dir() : images.dir();
    }

    /** Samples per epoch. */
    int train() {
        return workload.size();
    }

    /** Held-out samples. */
    int held() {
        return cases != null ? cases.held().size() : images.held().size();
    }

    /** What the start line calls the samples. */
    String unit() {
        return images != null ? "images (" + images.classes() + " classes)" : "cases";
    }
}
