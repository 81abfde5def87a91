"""What a training loop does must not cost the serving job a checkpoint: a pause longer than the
checkpoint timeout, against the real job, counted from the run's checkpoints.json."""

import json
import os
import time

import pytest

from minato_flink import launch

CASES = 6  # the dataset fixture's


def checkpoints(run):
    """The run's account of its checkpoints; all zero before the first completed."""
    try:
        with open(os.path.join(run, "checkpoints.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"completed": 0, "failed": 0, "timed_out": 0, "restores": 0}


# Who waits for room while the loop pauses: the fast workers (samples prepared within the
# deadline), or the slow workers (a 1 ms deadline cuts every sample off to the slow path).
@pytest.mark.parametrize("deadline", [[], ["--timeout", "1"]], ids=["fast-path", "slow-path"])
def test_should_checkpoint_throughout_a_pause_three_times_the_checkpoint_timeout(
        dataset, tmp_path, deadline):
    """The loop takes a few batches, then pauses 3 x the 10 s checkpoint timeout (an evaluation
    pass, a long step), then goes on: the job keeps checkpointing at its interval meanwhile, and
    no checkpoint times out, fails over or restores, whichever workers wait meanwhile."""
    run = str(tmp_path / "run")
    timeout_s = 10  # the job's checkpoint timeout at a 300 ms interval: at least 10 s
    seen = []
    with launch(dataset, epochs=20, batch=2, patch=16, run_dir=run,
                extra_args=["--eval-cases", "0", "--checkpoint-interval", "300", *deadline]
                ) as loader:
        for epoch in range(loader.epochs):
            for step, batch in enumerate(loader):
                seen += [tuple(s) for s in batch.samples.tolist()]
                if epoch == 3 and step == 0:
                    before = checkpoints(run)["completed"]
                    time.sleep(3 * timeout_s)
                    during = checkpoints(run)["completed"] - before
        account = checkpoints(run)
    assert sorted(seen) == [(e, i) for e in range(20) for i in range(CASES)]
    # A checkpoint every 300 ms is 100 in 30 s; one that waited for the loop would complete none
    # and time out after 10 s.
    assert during >= 30, account
    assert account["timed_out"] == 0, account
    assert account["restores"] == 0, account
