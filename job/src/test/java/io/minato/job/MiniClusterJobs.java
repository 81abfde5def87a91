package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.loader.SampleRecipe;
import io.minato.spi.Workload;
import io.minato.trainer.AcceleratorFactory;
import io.minato.trainer.TrainerSink;
import io.minato.workload.kits19.CaseFiles;
import io.minato.workload.kits19.Dataset;
import io.minato.workload.kits19.KitsLikeGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/**
 * What the tests that run the job on a shared MiniCluster use: the cluster, the trainer sink
 * writing into the run's folder, and the check that a run trained no sample twice.
 */
final class MiniClusterJobs {
    private MiniClusterJobs() {}

    /** Eight small generated cases in {@code data}; the six training ones (two held out). */
    static List<CaseFiles> smallTrainingSet(Path data) throws Exception {
        KitsLikeGenerator.builder().optCases(8).optScale(0.15).optSeed(6).build().generate(data);
        return Dataset.scan(data).split(2).train();
    }

    /** A MiniCluster of {@code taskManagers} TaskManagers of {@code slots} slots each. */
    static MiniClusterExtension cluster(int taskManagers, int slots, Configuration configuration) {
        return new MiniClusterExtension(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(taskManagers)
                        .setNumberSlotsPerTaskManager(slots)
                        .setConfiguration(configuration)
                        .build());
    }

    /**
     * Trainers on {@code accelerator} preparing {@code workload}'s samples again where needed,
     * their outputs and traces in {@code run}.
     */
    static TrainerSink sink(AcceleratorFactory accelerator, Path run, Workload<?> workload) {
        return sink(accelerator, run, workload, TrainerSink.DEFAULT_RESTARTS_WITHOUT_CHECKPOINT);
    }

    /** The same, recovering from {@code restarts} failures since the last checkpoint. */
    static TrainerSink sink(
            AcceleratorFactory accelerator, Path run, Workload<?> workload, int restarts) {
        return TrainerSink.builder()
                .setAccelerator(accelerator)
                .optOutputDir(run)
                .optTraceDir(run)
                .optRecipe(new SampleRecipe(workload))
                .optRestartsWithoutCheckpoint(restarts)
                .build();
    }

    /**
     * The (epoch, index) pairs of a merged trace ({@link io.minato.trainer.TraceFiles#merge}), each
     * checked to be there once: no sample was trained twice.
     */
    static Set<String> trainedOnce(Path trace) throws IOException {
        List<String> lines = Files.readAllLines(trace);
        Set<String> seen = new HashSet<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            assertThat(seen.add(f[0] + "," + f[1])).as("trained twice: %s", line).isTrue();
        }
        return seen;
    }
}
