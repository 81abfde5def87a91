package io.minato.job.report;

import java.util.Locale;

/**
 * A small bench.json as scripts/bench writes it: 2 loaders x 2 simulated step times (0, 100 ms) x 2
 * repetitions. "minato" gets slower with the step (wall 2-3 s, then 8-9 s; busy 6 %, then 85 %),
 * "inorder" faster (6-7 s, then 4-5 s; busy 10 %, then 50 %); bound_s 1 s, then 3 s. Each run's
 * first epoch takes half its wall time and holds 10 of its 40 samples (the later epochs: 30 samples
 * in the other half); start_s is 3.5 s in repetition 1 and 4.5 s in 2; each waited 0.5 s, of it 0.2
 * s times the repetition head-of-line for "inorder" and none for "minato", and fetched 0.1 s times
 * the repetition; the runs at 100 ms of repetition 2 have no epoch, start and stall fields, as
 * older reports.
 */
public final class BenchFixture {
    private BenchFixture() {}

    public static String json() {
        return "[\n"
                + String.join(
                        ",\n",
                        run("minato", 0, 1, 2.0, 0.05, 1.0, 2),
                        run("inorder", 0, 1, 6.0, 0.10, 1.0, 0),
                        run("minato", 100, 1, 8.0, 0.80, 3.0, 4),
                        run("inorder", 100, 1, 4.0, 0.50, 3.0, 0),
                        run("minato", 0, 2, 3.0, 0.07, 1.0, 6),
                        run("inorder", 0, 2, 7.0, 0.10, 1.0, 0),
                        run("minato", 100, 2, 9.0, 0.90, 3.0, 4),
                        run("inorder", 100, 2, 5.0, 0.50, 3.0, 0))
                + "\n]\n";
    }

    /** One report in CONTRACT.md's format (of 40 delivered samples) plus bench's two fields. */
    static String run(
            String loader, int stepMs, int rep, double wall, double busy, double bound, int slow) {
        return String.format(
                Locale.ROOT,
                "  {\"loader\": \"%s\", \"devices\": 2, \"batch\": 2, \"patch\": 32, \"epochs\": 1,"
                        + " \"seed\": 7, \"dataset\": {\"cases\": 10, \"train\": 40, \"eval\": 0},"
                        + " \"wall_s\": %s, \"steps\": 10, \"samples\": {\"delivered\": 40,"
                        + " \"fast\": %d, \"slow\": %d, \"dropped\": 0, \"quarantined\": 0},"
                        + " \"accelerator\": {\"kind\": \"simulated\", \"busy_fraction\": %s,"
                        + " \"wait_s\": 0.5}, \"gpu\": null, \"prep_ms\": {\"p50\": 5.0, \"p90\":"
                        + " 50.0, \"p99\": 90.0, \"max\": 100.0, \"sum\": 800.0}, \"cpu\":"
                        + " {\"cores\": 2, \"process_cpu_s\": 3.5}, \"bound_s\": %s,"
                        + " \"timeout_ms\": 40.0, \"loss\": null, \"optimizer\": null,"
                        + " \"dice\": null, %s\"simulated_step_ms\": %d.0, \"rep\": %d}",
                loader,
                wall,
                40 - slow,
                slow,
                busy,
                bound,
                stepMs == 100 && rep == 2
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                "\"start_s\": %s, \"first_epoch\": {\"wall_s\": %s, \"samples\":"
                                        + " 10},"
                                        + " \"later_epochs\": {\"wall_s\": %s, \"samples\": 30,"
                                        + " \"samples_per_s\": %s}, \"stall\": {\"wait_s\": 0.5,"
                                        + " \"head_of_line_s\": %s, \"behind_s\": %s, \"fetch_s\":"
                                        + " %s, \"transform_s\": 0.7}, ",
                                rep == 1 ? 3.5 : 4.5,
                                wall / 2,
                                wall / 2,
                                30 / (wall / 2),
                                hol(loader, rep),
                                0.5 - hol(loader, rep),
                                0.1 * rep),
                stepMs,
                rep);
    }

    private static double hol(String loader, int rep) {
        return loader.equals("inorder") ? 0.2 * rep : 0;
    }
}
