package io.minato.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.sample.Batch;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Two data-parallel replicas of one model in a replica group of their own, each stepping on a
 * thread of its own as two writers' threads would; closing leaves the group and releases both.
 */
final class TwoReplicas implements AutoCloseable {
    final DjlAccelerator r0;
    final DjlAccelerator r1;
    private final ReplicaGroup.Member m0;
    private final ReplicaGroup.Member m1;
    private final ExecutorService threads = Executors.newFixedThreadPool(2);

    /** Replicas of {@code settings} from {@code start} (replica 1 gets it through the group). */
    TwoReplicas(TrainingSettings settings, byte[] start) throws Exception {
        r0 = new DjlAccelerator(settings);
        r1 = new DjlAccelerator(settings);
        r0.restore(start);
        String group = "replicas-" + UUID.randomUUID();
        m0 = ReplicaGroup.join(group, 2, 0);
        m1 = ReplicaGroup.join(group, 2, 1);
        r0.replicate(m0);
        r1.replicate(m1);
    }

    /**
     * Global step {@code step}: replica 0 trains on {@code b0} while replica 1 trains on {@code
     * b1}, or takes an idle step when that is null; then the two are checked identical.
     */
    void step(int step, Batch b0, Batch b1) throws Exception {
        Future<StepResult> f0 = threads.submit(() -> r0.train(b0));
        Callable<Object> step1 = b1 != null ? () -> r1.train(b1) : () -> r1.idleStep();
        Future<Object> f1 = threads.submit(step1);
        f0.get(120, TimeUnit.SECONDS);
        f1.get(120, TimeUnit.SECONDS);
        assertThat(r1.snapshot())
                .as("replicas identical after step %d", step)
                .isEqualTo(r0.snapshot());
    }

    /**
     * Global step {@code step} at which every sample of replica 1's batch was left out as bad
     * input, and of replica 0's too when {@code b0} is null; then the two are checked identical.
     */
    void stepLeavingOut(int step, Batch b0) throws Exception {
        Callable<Object> step0 =
                b0 != null
                        ? () -> r0.train(b0)
                        : () -> {
                            r0.stepWithoutSamples();
                            return null;
                        };
        Future<Object> f0 = threads.submit(step0);
        Future<Object> f1 =
                threads.submit(
                        () -> {
                            r1.stepWithoutSamples();
                            return null;
                        });
        f0.get(120, TimeUnit.SECONDS);
        f1.get(120, TimeUnit.SECONDS);
        assertThat(r1.snapshot())
                .as("replicas identical after step %d", step)
                .isEqualTo(r0.snapshot());
    }

    /** Neither replica has data any more: the group ends for both. */
    void end() throws Exception {
        Future<Boolean> e0 = threads.submit(r0::idleStep);
        Future<Boolean> e1 = threads.submit(r1::idleStep);
        assertThat(e0.get(60, TimeUnit.SECONDS)).isFalse();
        assertThat(e1.get(60, TimeUnit.SECONDS)).isFalse();
    }

    /**
     * Checks that {@code replica}'s parameters after global step {@code step} are those of {@code
     * single}, trained alone on the replicas' batches together, but for float rounding of sums
     * taken in another order: 1e-5 absolute, 1e-3 relative.
     */
    static void assertClose(DjlAccelerator replica, DjlAccelerator single, int step) {
        var mine = replica.parameters();
        var theirs = single.parameters();
        double worst = 0;
        String where = "";
        for (int i = 0; i < mine.size(); i++) {
            float[] a = mine.get(i).getValue().getArray().toFloatArray();
            float[] b = theirs.get(i).getValue().getArray().toFloatArray();
            for (int j = 0; j < a.length; j++) {
                double error = Math.abs(a[j] - b[j]) / (1e-2 + Math.abs(b[j]));
                if (error > worst) {
                    worst = error;
                    where = mine.get(i).getKey() + "[" + j + "]: " + a[j] + " vs " + b[j];
                }
            }
        }
        assertThat(worst)
                .as("worst relative difference after step %d at %s", step, where)
                .isLessThan(1e-3);
    }

    @Override
    public void close() {
        threads.shutdownNow();
        m0.leave();
        m1.leave();
        r1.close();
        r0.close();
    }
}
