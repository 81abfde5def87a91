package io.minato.job.workload.kits19;

import io.minato.data.BadInputException;
import io.minato.job.report.RunReport;
import io.minato.job.workload.DataSpec;
import io.minato.job.workload.DataSplit;
import io.minato.job.workload.SampleList;
import io.minato.workload.kits19.CaseCache;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.Dataset;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * The kits19 workload's side of a run: the folder of case pairs scanned, every training case
 * checked (on all cores), the held-out cases split off. {@code profile} and {@code evaluate} read
 * their cases here too.
 */
public final class KitsData {

    private KitsData() {}

    /** The data folder: --data, or the demo set, generated first if it is not there yet. */
    static Path dataDir(DataSpec data) throws IOException {
        if (!data.demo()) {
            return data.data();
        }
        if (!Files.exists(DataSpec.DEMO_DATA.resolve("case_00000_x.npy"))) {
            System.err.println("generating the demo dataset under " + DataSpec.DEMO_DATA + "/ ...");
            KitsLikeGenerator.builder().build().generate(DataSpec.DEMO_DATA);
        }
        return DataSpec.DEMO_DATA;
    }

    /**
     * The dataset split into held-out and training cases, every training case checked: a bad one
     * stops the run (fail) or is left out and counted (skip), with one line on {@code err}.
     */
    public static Cases cases(DataSpec data, PrintWriter err)
            throws IOException, BadInputException {
        Path dir = dataDir(data);
        Dataset dataset = Dataset.scan(dir);
        Dataset.Split split;
        if (data.cases() != null) {
            SampleList.Split<CaseFiles> listed =
                    SampleList.read(data.cases()).split(dataset.cases(), CaseFiles::name, "" + dir);
            split = new Dataset.Split(listed.listed(), listed.others());
        } else {
            split =
                    dataset.split(
                            data.evalCases() != null
                                    ? data.evalCases()
                                    : Dataset.defaultEvalCases(dataset.size()));
        }
        int eval = split.eval().size();
        CaseCache cache = data.caseCache(dir);
        List<CaseFiles> all = dataset.cases();
        Set<CaseFiles> training = new HashSet<>(split.train());
        // The checks read every voxel once (or recall a check of the same files): on all cores,
        // with the outcomes taken in name order so that the first bad case reported is the same.
        BadInputException[] problems = new BadInputException[all.size()];
        IntStream.range(0, all.size())
                .parallel()
                .forEach(
                        i -> {
                            CaseFiles c = all.get(i);
                            // Held-out cases may be any size: sliding-window inference pads them.
                            try {
                                cache.check(
                                        c,
                                        training.contains(c)
                                                ? data.transformConfig().patch()
                                                : null);
                            } catch (BadInputException e) {
                                problems[i] = e;
                            }
                        });
        List<CaseFiles> train = new ArrayList<>();
        List<CaseFiles> held = new ArrayList<>();
        List<RunReport.Quarantine> quarantine = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            CaseFiles c = all.get(i);
            if (problems[i] == null) {
                (training.contains(c) ? train : held).add(c);
                continue;
            }
            data.leaveOut(problems[i], dir, quarantine, err);
        }
        if (train.isEmpty()) {
            throw new BadInputException(dir, "every training case was skipped as bad input");
        }
        return new Cases(
                dir,
                dataset.size(),
                eval,
                List.copyOf(train),
                List.copyOf(held),
                List.copyOf(quarantine),
                cache);
    }

    /** The cases a run trains on. */
    public record Cases(
            Path dir,
            int total,
            int eval,
            List<CaseFiles> train,
            List<CaseFiles> held,
            List<RunReport.Quarantine> quarantine,
            CaseCache cache)
            implements DataSplit {

        /** Cases left out as bad input. */
        public int quarantined() {
            return quarantine.size();
        }
    }
}
