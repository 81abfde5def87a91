package io.minato.trainer;

import io.minato.sample.Batch;

/** A replicated accelerator whose step is only the all-reduce of a dummy gradient. */
final class LockstepAccelerator implements Accelerator {
    private ReplicaGroup.Member member;
    private long step = -1;

    @Override
    public boolean replicated() {
        return true;
    }

    @Override
    public void replicate(ReplicaGroup.Member member) {
        this.member = member;
    }

    @Override
    public StepResult train(Batch batch) throws InterruptedException {
        start();
        member.allReduce(++step, new float[] {1f}, batch.samples().size());
        return StepResult.noLoss(1);
    }

    @Override
    public boolean idleStep() throws InterruptedException {
        start();
        if (member.allReduce(step + 1, null, 0) == null) {
            return false;
        }
        step++;
        return true;
    }

    @Override
    public void stepWithoutSamples() throws InterruptedException {
        start();
        member.allReduce(++step, ReplicaGroup.NO_SAMPLES, 0);
    }

    private void start() throws InterruptedException {
        if (step < 0) {
            member.initialState(new byte[0], 0);
            step = member.startStep();
        }
    }

    @Override
    public String kind() {
        return SimulatedAccelerator.KIND;
    }
}
