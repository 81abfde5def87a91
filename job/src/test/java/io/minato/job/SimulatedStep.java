package io.minato.job;

import io.minato.sample.Batch;
import io.minato.trainer.Accelerator;
import io.minato.trainer.SimulatedAccelerator;
import io.minato.trainer.StepResult;

/**
 * A simulated step that sleeps {@code stepMillis}, for the MiniCluster tests' accelerators to
 * inject their faults into or record what they train: they override {@link #train} and end it with
 * this one's.
 */
abstract class SimulatedStep implements Accelerator {
    private final SimulatedAccelerator sleep;

    SimulatedStep(long stepMillis) {
        sleep = new SimulatedAccelerator(stepMillis);
    }

    @Override
    public StepResult train(Batch batch) throws Exception {
        return sleep.train(batch);
    }

    @Override
    public String kind() {
        return SimulatedAccelerator.KIND;
    }
}
