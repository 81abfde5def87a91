package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.minato.job.dataflow.LoaderJob;
import io.minato.loader.TimeoutPolicy;
import io.minato.spi.Workload;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.TrainerSink;
import io.minato.workload.kits19.CaseTable;
import io.minato.workload.kits19.TransformConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The Java API's builder: its defaults, what it requires, and what it refuses. */
class LoaderJobBuilderTest {

    private static final Workload<?> WORKLOAD =
            new CaseTable(List.of()).workload(TransformConfig.mlperf(16));

    private static final TrainerSink TRAINER =
            TrainerSink.builder().setAccelerator(SimulatedAccelerator.parse("simulated:0")).build();

    @Test
    void shouldTakeTheTrainCommandsDefaults() {
        LoaderJob.Settings s =
                LoaderJob.builder().setWorkload(WORKLOAD).setTrainer(TRAINER).build().settings();

        assertThat(s.loader()).isEqualTo(LoaderJob.Loader.minato);
        assertThat(s.workload()).isSameAs(WORKLOAD);
        assertThat(s.epochs()).isEqualTo(1);
        assertThat(s.seed()).isEqualTo(DataOptions.DEFAULT_SEED);
        assertThat(s.batch()).isEqualTo(2);
        assertThat(s.devices()).isEqualTo(1);
        assertThat(s.fastWorkers()).isEqualTo(1);
        assertThat(s.slowWorkers()).isEqualTo(1);
        assertThat(s.scheduled()).isFalse();
    }

    @Test
    void shouldKeepEveryOptionGiven() {
        TimeoutPolicy timeout = TimeoutPolicy.parse("25");
        LoaderJob.Settings s =
                LoaderJob.builder()
                        .setWorkload(WORKLOAD)
                        .setTrainer(TRAINER)
                        .optLoader(LoaderJob.Loader.inorder)
                        .optEpochs(3)
                        .optSeed(11)
                        .optBatchSize(4)
                        .optDevices(2)
                        .optWorkers(3, 2)
                        .optTimeout(timeout)
                        .build()
                        .settings();

        assertThat(s.loader()).isEqualTo(LoaderJob.Loader.inorder);
        assertThat(List.of(s.epochs(), s.batch(), s.devices(), s.fastWorkers(), s.slowWorkers()))
                .containsExactly(3, 4, 2, 3, 2);
        assertThat(s.seed()).isEqualTo(11);
        assertThat(s.timeout()).isSameAs(timeout);
    }

    @Test
    void shouldScheduleTheWorkersOfMinatosLoaderOnly() {
        LoaderJob.Builder b =
                LoaderJob.builder()
                        .setWorkload(WORKLOAD)
                        .setTrainer(TRAINER)
                        .optScheduledWorkers(2, 2);

        assertThat(b.build().settings().scheduled()).isTrue();
        assertThat(b.optLoader(LoaderJob.Loader.djl).build().settings().scheduled())
                .as("the baselines' threads are not Minato's workers")
                .isFalse();
        assertThat(
                        b.optLoader(LoaderJob.Loader.minato)
                                .optWorkers(2, 2)
                                .build()
                                .settings()
                                .scheduled())
                .as("fixed workers after scheduled ones")
                .isFalse();
    }

    @Test
    void shouldRefuseAJobWithoutWorkloadOrTrainerAndCountsBelowOne() {
        assertThatThrownBy(() -> LoaderJob.builder().setTrainer(TRAINER).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("workload and a trainer");
        assertThatThrownBy(() -> LoaderJob.builder().setWorkload(WORKLOAD).build())
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> LoaderJob.builder().optBatchSize(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("batch size must be >= 1: 0");
        assertThatThrownBy(() -> LoaderJob.builder().optWorkers(1, 0))
                .hasMessageContaining("slow workers");
        assertThatThrownBy(() -> LoaderJob.builder().optEpochs(-1)).hasMessageContaining("epochs");
    }
}
