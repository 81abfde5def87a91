"""What a training loop does must not cost the serving job a checkpoint or a sample: a pause
longer than the checkpoint timeout, counted from the run's checkpoints.json, and a training
process killed again and again, counted from what it trained; against the real job."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, kill_job
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



def test_should_checkpoint_while_the_training_process_connects_late(dataset, tmp_path):
    """The job serves, and its training process connects only 3 x the checkpoint timeout later
    (a script that builds its model or loads a large checkpoint first, a torchrun rank that
    starts late): the job checkpoints at its interval meanwhile, none times out or restores,
    and the process then gets every sample once."""
    run = str(tmp_path / "run")
    timeout_s = 10  # the job's checkpoint timeout at a 300 ms interval: at least 10 s
    seen = []
    with launch(dataset, epochs=4, batch=2, patch=16, run_dir=run,
                extra_args=["--eval-cases", "0", "--checkpoint-interval", "300"]) as loader:
        endpoint = os.path.join(run, "serving", "rank-0.json")
        deadline = time.monotonic() + 120
        while not os.path.exists(endpoint):
            assert time.monotonic() < deadline, "the job did not serve in 120 s"
            time.sleep(0.1)
        before = checkpoints(run)["completed"]
        time.sleep(3 * timeout_s)
        during = checkpoints(run)["completed"] - before
        for _ in range(loader.epochs):
            for batch in loader:
                seen += [tuple(s) for s in batch.samples.tolist()]
        account = checkpoints(run)
    assert sorted(seen) == [(e, i) for e in range(4) for i in range(CASES)]
    assert during >= 30, account
    assert account["timed_out"] == 0, account
    assert account["restores"] == 0, account

# A training script as a user writes one, saving its checkpoint after every batch: the loader's
# state and, for the test, every sample trained so far. Told to die after K batches, it dies by
# SIGKILL there, before or after that batch's save ("lost" or "saved"), leaving its job's pid
# behind, as a machine's crash or the OOM killer would.
KILLED_SCRIPT = """
import glob, json, os, signal, sys, time
import torch
from minato_flink import launch

data, run, ckpt, trained_file, die_after, when = sys.argv[1:7]
loader = launch(data, run_dir=run, epochs=4, batch=2, patch=16,
                extra_args=["--eval-cases", "0", "--checkpoint-interval", "200"])
trained = []
if os.path.exists(ckpt):
    saved = torch.load(ckpt)
    loader.load_state_dict(saved["loader"])
    trained = saved["trained"]
batches = 0
for epoch in range(loader.epoch, loader.epochs):
    for batch in loader:
        trained += [tuple(s) for s in batch.samples.tolist()]
        batches += 1
        dies = batches == int(die_after)
        if dies and when == "lost":
            pass  # this batch was trained but never saved: the next run gets it again
        else:
            torch.save({"loader": loader.state_dict(), "trained": trained}, ckpt + ".part")
            os.replace(ckpt + ".part", ckpt)
        if dies:
            while not glob.glob(os.path.join(run, "checkpoints", "*", "chk-*", "_metadata")):
                time.sleep(0.05)  # until the job has a checkpoint to resume from
            with open(run + ".job-pid", "w") as f:
                f.write(str(loader._job._proc.pid))
            os.kill(os.getpid(), signal.SIGKILL)
loader.close()
with open(trained_file, "w") as f:
    json.dump(trained, f)
"""


def test_should_train_every_sample_once_across_five_kills_of_the_training_process(
        dataset, tmp_path):
    """The training process is killed -9 five times in one run, each time after a random number
    of batches and before or after its last save, its job with it; each time the script starts
    again from its own checkpoint and the job resumes the run (launch() on the run directory).
    What the process trained, counted from its saves, is every (epoch, index) once."""
    rng = random.Random(5)
    plan = [(rng.randint(1, 2), rng.choice(["lost", "saved"])) for _ in range(5)]
    script = tmp_path / "train.py"
    script.write_text(KILLED_SCRIPT)
    run, ckpt, trained_file = tmp_path / "run", tmp_path / "ckpt.pt", tmp_path / "trained.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))

    def start(die_after, when):
        return subprocess.run(
            [sys.executable, str(script), dataset, str(run), str(ckpt), str(trained_file),
             str(die_after), when], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=180)

    for die_after, when in plan:
        killed = start(die_after, when)
        assert killed.returncode == -signal.SIGKILL, (plan, killed.stderr)
        kill_job(int((tmp_path / "run.job-pid").read_text()))
    last = start(0, "saved")
    assert last.returncode == 0, (plan, last.stderr)
    trained = [tuple(s) for s in json.loads(trained_file.read_text())]
    assert len(trained) == len(set(trained)), plan
    assert sorted(trained) == [(e, i) for e in range(4) for i in range(CASES)], plan
    assert "resuming " + str(run) in (run / "console.log").read_text()
