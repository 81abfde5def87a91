package io.minato.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.job.report.RunReport;
import io.minato.job.workload.HeldOut;
import io.minato.job.workload.kits19.Evaluation;
import io.minato.trainer.DjlAccelerator;
import io.minato.trainer.TrainingSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The held-out evaluation a detached job runs in its last trainer's TaskManager before it writes
 * its report (the whole of it, trained for real, in {@link FlinkRunIT}).
 */
class DetachedReportTest {
    private static final DjlAccelerator.Factory TRAINED =
            new DjlAccelerator.Factory(
                    TrainingSettings.builder()
                            .setWidth(0.125)
                            .setLearningRate(0.01f)
                            .setSeed(3)
                            .build());

    private static final RunReport.Outcome UNSCORED =
            new RunReport.Outcome(
                    List.of(), 0, null, null, null, null, null, null, null, null, null);

    @TempDir Path run;

    @Test
    void shouldScoreTheSavedModelInTheRunDirectoryOnItsFirstDevice() throws Exception {
        HeldOut scored =
                (outcome, trained, err) -> {
                    assertThat(trained.dir().getFileName()).hasToString("model-device-0");
                    assertThat(trained.width()).isEqualTo(0.25);
                    assertThat(trained.device()).isEqualTo(ai.djl.Device.cpu());
                    err.println("evaluated case_00004: kidney 0.900, tumour 0.100 (1.0 s)");
                    return outcome.evaluated(new RunReport.Dice(0.5, 0.9, 0.1, 1), null);
                };
        // As the job carries it to the TaskManager.
        HeldOutEvaluation evaluation =
                InstantiationUtil.clone(
                        new HeldOutEvaluation(scored, 1, "case(s)", TRAINED, 0.25),
                        getClass().getClassLoader());

        RunReport.Outcome outcome = DetachedReport.evaluated(evaluation, UNSCORED, run);

        assertThat(outcome.dice()).isEqualTo(new RunReport.Dice(0.5, 0.9, 0.1, 1));
        assertThat(run.resolve(DetachedReport.EVALUATION_ERROR)).doesNotExist();
    }

    /**
     * A TaskManager that cannot see the model the first device saved (a run directory not shared
     * between hosts, say): the report goes on without its score, and one line says why.
     */
    @Test
    void shouldWriteTheReportWithoutTheScoreAndSayWhyWhenTheEvaluationFails() throws IOException {
        HeldOut missingModel =
                (outcome, trained, err) ->
                        outcome.evaluated(
                                Evaluation.evaluate(
                                        trained.dir(),
                                        trained.width(),
                                        32,
                                        List.of(),
                                        trained.device()),
                                null);
        HeldOutEvaluation evaluation =
                new HeldOutEvaluation(missingModel, 1, "case(s)", TRAINED, 0.25);

        RunReport.Outcome outcome = DetachedReport.evaluated(evaluation, UNSCORED, run);

        assertThat(outcome).isEqualTo(UNSCORED);
        List<String> why = Files.readAllLines(run.resolve(DetachedReport.EVALUATION_ERROR));
        assertThat(why).hasSize(1);
        assertThat(why.get(0))
                .startsWith(
                        "the held-out evaluation failed: " + run.resolve("model-device-0") + ": ")
                .contains("no saved model unet3d-0000.params");
    }
}
