package io.minato.job.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.MAP;

import io.minato.json.Json;
import io.minato.trainer.DeviceCounters;
import io.minato.trainer.DeviceSummary;
import io.minato.trainer.gpu.GpuStats;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report built from device summaries left in a run directory, without running a job. */
class RunReportTest {
    private static final long GIB = 1L << 30;

    @TempDir Path run;

    @Test
    void shouldAggregateTheGpuReadingsOfTwoDevicesAfterTheAccelerator() throws IOException {
        summary(0, new GpuStats(10, 80.0, 5 * GIB, 80 * GIB));
        summary(1, new GpuStats(12, 60.0, 7 * GIB, 80 * GIB));

        String json = report(2).toJson();

        assertThat(json)
                .contains(
                        "  \"gpu\": {\"devices\": 2, \"utilization_mean_percent\": 70.0,"
                                + " \"memory_peak_bytes\": 7516192768,"
                                + " \"memory_total_bytes\": 85899345920},\n");
        assertThat(json.indexOf("\"accelerator\": "))
                .isLessThan(json.indexOf("\"gpu\": "))
                .isLessThan(json.indexOf("\"prep_ms\": "));
        assertThat(json.substring(json.indexOf("\"accelerator\": "), json.indexOf("\"prep_ms\"")))
                .as("gpu comes right after accelerator")
                .matches("(?s)\"accelerator\": \\{[^}]*\\},\n  \"gpu\": \\{[^}]*\\},\n  ");
    }

    /**
     * Each TaskManager on a line of its own, its CPU also per sample trained in the job (here 12
     * samples): the trainers' 3 s is 250 ms a sample.
     */
    @Test
    void shouldGiveEachTaskManagersPartWithItsCpuPerSample() throws IOException {
        summary(0, null);
        summary(1, null);
        assertThat(report(2).toJson())
                .contains(
                        "  \"task_managers\": [{\"id\": \"tm-1\", \"workers\": 0, \"trainers\": 2,"
                                + " \"process_cpu_s\": 3.0, \"cpu_ms_per_sample\": 250.0,"
                                + " \"peak_rss_mb\": 512.0, \"active_mean\": null}, {\"id\": \"tm-2\","
                                + " \"workers\": 4, \"trainers\": 0, \"process_cpu_s\": 6.0,"
                                + " \"cpu_ms_per_sample\": 500.0, \"peak_rss_mb\": null,"
                                + " \"active_mean\": 2.35}],\n");
    }

    /** The samples that crossed to another TaskManager, and how many of them went in pieces. */
    @Test
    void shouldSayHowManySamplesCrossedAndHowManyInPieces() throws IOException {
        summary(0, null);
        summary(1, null);
        assertThat(report(2).toJson())
                .contains(
                        "  \"workers\": {\"fast\": 2, \"slow\": 2, \"auto\": true,"
                                + " \"active_mean\": 1.75, \"sent_as_bytes\": 12,"
                                + " \"sent_in_pieces\": 4},\n");
    }

    @Test
    void shouldSplitTheWaitIntoHeadOfLineAndBehindAndTheWorkersTimeIntoFetchAndTransform()
            throws IOException {
        DeviceSummary.of(0, "cpu", counters(2_000_000_000L, 500_000_000L, 2_000, 4), null)
                .write(run);
        DeviceSummary.of(1, "cpu", counters(1_000_000_000L, 0, 2_000, 4), null).write(run);

        RunReport r = report(2);

        assertThat(r.toJson())
                .contains(
                        "  \"stall\": {\"wait_s\": 3.0, \"head_of_line_s\": 0.5, \"behind_s\":"
                                + " 2.5, \"fetch_s\": 0.5, \"fetch_cpu_s\": 0.25, \"transform_s\": ");
        assertThat(r.behindSeconds()).isEqualTo(2.5);
        assertThat(r.summaryLine()).contains("waited 3.0 s (head-of-line 0.5 s, behind 2.5 s)");
    }

    @Test
    void shouldCountOnlyDevicesWithReadingsAndLeaveUnreportedUtilisationOutOfTheMean()
            throws IOException {
        summary(0, new GpuStats(4, Double.NaN, 2 * GIB, 40 * GIB)); // a MIG instance
        summary(1, new GpuStats(4, 30.0, 1 * GIB, 80 * GIB));
        summary(2, null);

        assertThat(report(3).toJson())
                .contains(
                        "\"gpu\": {\"devices\": 2, \"utilization_mean_percent\": 30.0,"
                                + " \"memory_peak_bytes\": 2147483648,"
                                + " \"memory_total_bytes\": 85899345920}");
    }

    @Test
    void shouldWriteNullUtilisationWhenNoDeviceReportedIt() throws IOException {
        summary(0, new GpuStats(4, Double.NaN, 2 * GIB, 40 * GIB));

        assertThat(report(1).toJson()).contains("\"utilization_mean_percent\": null,");
    }

    /** The trainers' coordinator's account of the job's checkpoints, as the report gives it. */
    @Test
    void shouldGiveTheJobsCheckpointsTimedOutAndRestoresAndNullWithoutAnAccount()
            throws IOException {
        summary(0, null);
        assertThat(report(1).toJson()).contains("  \"checkpoints\": null,\n");

        java.nio.file.Files.writeString(
                run.resolve(io.minato.trainer.TrainerSink.CHECKPOINTS_FILE),
                "{\"completed\": 41, \"failed\": 3, \"timed_out\": 1,"
                        + " \"longest_pending_s\": 10.004, \"restores\": 5}\n");
        assertThat(report(1).toJson())
                .contains(
                        "  \"checkpoints\": {\"completed\": 41, \"failed\": 3, \"timed_out\": 1,"
                                + " \"longest_pending_s\": 10.004, \"restores\": 5},\n");

        java.nio.file.Files.writeString(
                run.resolve(io.minato.trainer.TrainerSink.CHECKPOINTS_FILE), "{\"completed\": 1}");
        assertThatThrownBy(() -> report(1))
                .isInstanceOf(IOException.class)
                .hasMessageEndingWith("checkpoints.json: no number \"failed\"");
    }

    @Test
    void shouldReportNullGpuWhenNoDeviceHadAGpu() throws IOException {
        summary(0, null);
        summary(1, null);

        String json = report(2).toJson();

        assertThat(json).contains("  \"gpu\": null,\n  \"prep_ms\": ");
        assertThat(json).contains("\"kind\": \"gpu\"", "\"steps\": 3", "\"delivered\": 12");
    }

    @Test
    void shouldNameTheFileOfAMalformedSummaryInOneLine() throws IOException {
        summary(0, null);
        Path bad = DeviceSummary.file(run, 1);
        Files.writeString(
                bad,
                DeviceSummary.of(1, "gpu", counters(), null)
                        .toJson()
                        .replace(", \"gpu_samples\": null", ""));

        assertThatThrownBy(() -> report(2))
                .isInstanceOf(IOException.class)
                .hasMessage("bad device summary " + bad + ": \"gpu_samples\" is missing");
    }

    @Test
    void shouldTellTheFirstEpochApartFromTheLaterOnes() throws IOException {
        // Steps from 1 000 to 4 000 ms; device 0's last epoch-0 step ended at 2 000 after 4 of
        // its 6 samples, device 1's at 2 500 after 2; the first request was at 500.
        DeviceSummary.of(0, "cpu", counters(2_000, 4), null).write(run);
        DeviceSummary.of(1, "cpu", counters(2_500, 2), null).write(run);

        String json = report(2, 3).toJson();

        assertThat(json)
                .contains(
                        "  \"first_epoch\": {\"wall_s\": 2.0, \"samples\": 6},\n"
                                + "  \"later_epochs\": {\"wall_s\": 1.5, \"samples\": 6,"
                                + " \"samples_per_s\": 4.0},\n");
    }

    @Test
    void shouldCountTheStartFromTheProcessStartToTheFirstRequestAndNullWhenUnknown()
            throws IOException {
        DeviceSummary.of(0, "cpu", counters(2_000, 4), null).write(run);

        assertThat(report(1, 2).toJson()).contains("  \"start_s\": 0.4,\n");
        RunReport detached = RunReport.build(configuration(1, 2, List.of()), outcome(null), run);
        assertThat(detached.toJson()).contains("  \"start_s\": null,\n");
        assertThat(report(1, 2, null, 900).toJson()).contains("  \"start_s\": null,\n");
    }

    @Test
    void shouldLeaveLaterEpochsNullForOneEpochAndBothNullWithoutAFirstEpochStep()
            throws IOException {
        DeviceSummary.of(0, "cpu", counters(4_000, 6), null).write(run);
        assertThat(report(1, 1).toJson())
                .contains(
                        "  \"first_epoch\": {\"wall_s\": 3.5, \"samples\": 6},\n"
                                + "  \"later_epochs\": null,\n");

        DeviceSummary.of(0, "cpu", counters(0, 0), null).write(run);
        assertThat(report(1, 3).toJson())
                .contains("  \"first_epoch\": null,\n  \"later_epochs\": null,\n");
    }

    @Test
    void shouldReportPeakMemoryOverTheFirstEpochAndEachHalfOfTheLaterOnes() throws IOException {
        DeviceSummary.of(0, "cpu", counters(2_000, 4), null).write(run); // epoch 0 ends at 2 s
        long mib = 1 << 20;
        List<RunSampler.Sample> samples =
                List.of(
                        new RunSampler.Sample(1_000, 900 * mib, 300 * mib, -1, -1),
                        new RunSampler.Sample(2_000, 1000 * mib, 350 * mib, -1, -1),
                        new RunSampler.Sample(
                                3_000, 1500 * mib, 500 * mib, -1, -1), // later, 1st half
                        new RunSampler.Sample(4_000, 1400 * mib, 490 * mib, -1, -1), // (3 .. 5 s)
                        new RunSampler.Sample(6_000, 1450 * mib, 510 * mib, -1, -1), // 2nd half
                        new RunSampler.Sample(7_000, 1400 * mib, 480 * mib, -1, -1));
        assertThat(report(1, 3, samples).toJson())
                .contains(
                        "  \"memory\": {\"peak_rss_mb\": 1500.0, \"peak_anon_mb\": 510.0,"
                                + " \"first_epoch_peak_anon_mb\": 350.0,"
                                + " \"later_halves_peak_anon_mb\": [500.0, 510.0],"
                                + " \"anon_growth_over_later_epochs\": 0.02},\n");
        // Too few readings after the first epoch (or none at all): nothing to compare.
        assertThat(report(1, 3, samples.subList(0, 3)).toJson()).contains("\"memory\": null,");
        assertThat(report(1, 3, null).toJson()).contains("\"memory\": null,");
    }

    @Test
    void shouldReadResidentAndAnonymousMemoryFromProcStatus() {
        String status = "Name:\tjava\nVmHWM:\t  2000 kB\nVmRSS:\t  1536 kB\nRssAnon:\t  512 kB\n";
        assertThat(RunSampler.parse(7, status))
                .contains(new RunSampler.Sample(7, 1536 * 1024, 512 * 1024, -1, -1));
        assertThat(RunSampler.parse(7, "Name:\tjava\n")).isEmpty();
    }

    private static DeviceCounters counters(long firstEpochEnd, long samplesByThen) {
        return counters(0, 0, firstEpochEnd, samplesByThen);
    }

    /**
     * Three steps, six samples (four fast), 3 s busy, {@code waitNanos} waiting for batches ({@code
     * headOfLineNanos} of it while a loader held one back); the first epoch ended at {@code
     * firstEpochEnd} ms with {@code samplesByThen} samples.
     */
    private static DeviceCounters counters(
            long waitNanos, long headOfLineNanos, long firstEpochEnd, long samplesByThen) {
        return new DeviceCounters(
                3,
                4,
                2,
                3_000_000_000L,
                waitNanos,
                headOfLineNanos,
                1.0,
                0.5,
                1_000,
                4_000,
                firstEpochEnd,
                samplesByThen);
    }

    private void summary(int device, GpuStats gpu) throws IOException {
        DeviceSummary.of(device, "gpu", counters(), gpu).write(run);
    }

    /** Three steps, six samples (four fast), 3 s busy. */
    private static DeviceCounters counters() {
        return counters(2_000, 4);
    }

    @Test
    void shouldListEveryQuarantinedInputWithItsReasonAndTheAccuracyOfAClassifier()
            throws IOException {
        summary(0, null);
        List<RunReport.Quarantine> left =
                List.of(
                        new RunReport.Quarantine("dogs/broken.jpg", "not a JPEG \"image\""),
                        new RunReport.Quarantine("cats/empty.png", "empty file"));

        String json = report(1, 1, null, 100, left, new RunReport.Accuracy(0.625, 16)).toJson();

        @SuppressWarnings("unchecked")
        Map<String, Object> parsed = (Map<String, Object>) Json.parse(json);
        assertThat(parsed.get("workload")).isEqualTo("kits19");
        assertThat(parsed.get("quarantine"))
                .isEqualTo(
                        List.of(
                                Map.of("file", "dogs/broken.jpg", "reason", "not a JPEG \"image\""),
                                Map.of("file", "cats/empty.png", "reason", "empty file")));
        assertThat(parsed.get("accuracy")).isEqualTo(Map.of("top1", 0.625, "images", 16.0));
        assertThat(parsed.get("samples")).asInstanceOf(MAP).containsEntry("quarantined", 2.0);
        assertThat(parsed.get("dice")).isNull();
    }

    @Test
    void shouldWriteAnEmptyQuarantineAndNullAccuracyWhenNothingWasLeftOutOrClassified()
            throws IOException {
        summary(0, null);

        @SuppressWarnings("unchecked")
        Map<String, Object> parsed = (Map<String, Object>) Json.parse(report(1).toJson());

        assertThat(parsed.get("quarantine")).isEqualTo(List.of());
        assertThat(parsed).containsEntry("accuracy", null);
    }

    private RunReport report(int devices) throws IOException {
        return report(devices, 1);
    }

    private RunReport report(int devices, int epochs) throws IOException {
        return report(devices, epochs, null);
    }

    private RunReport report(int devices, int epochs, List<RunSampler.Sample> memory)
            throws IOException {
        return report(devices, epochs, memory, 100);
    }

    private RunReport report(
            int devices, int epochs, List<RunSampler.Sample> memory, long processStart)
            throws IOException {
        return report(devices, epochs, memory, processStart, List.of(), null);
    }

    private RunReport report(
            int devices,
            int epochs,
            List<RunSampler.Sample> memory,
            long processStart,
            List<RunReport.Quarantine> quarantine,
            RunReport.Accuracy accuracy)
            throws IOException {
        return RunReport.build(
                configuration(devices, epochs, quarantine),
                outcome(accuracy),
                new RunReport.Measurements(500, processStart, 1.0, memory),
                run);
    }

    private static RunReport.Configuration configuration(
            int devices, int epochs, List<RunReport.Quarantine> quarantine) {
        return new RunReport.Configuration(
                "kits19",
                "minato",
                devices,
                2,
                32,
                epochs,
                7,
                new RunReport.DataSet(10, 6 * devices, 2, quarantine),
                2,
                new RunReport.Workers(2, 2, true),
                null,
                null);
    }

    private static RunReport.Outcome outcome(RunReport.Accuracy accuracy) {
        return new RunReport.Outcome(
                List.of(),
                0,
                500L,
                null,
                null,
                1.754,
                new RunReport.Crossed(12, 4),
                new RunReport.Fetch(0.5, 0.25),
                List.of(
                        new RunReport.TaskManager("tm-1", 0, 2, 3.0, 512L << 20, null),
                        new RunReport.TaskManager("tm-2", 4, 0, 6.0, null, 2.345)),
                null,
                accuracy);
    }
}
