"""Resuming through launch(): a script killed mid-run and started again from its checkpoint
continues the job's run (launch(run_dir=R) on a folder that holds one), and its loader, given the
state saved with the model, gets exactly what that checkpoint had not seen. A state or options
that are not the run's are refused in one line, never a silent fresh start."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import REPO, kill_job
from minato_flink import LoaderError, MinatoLoader, launch

CASES = 6  # the dataset fixture's
EPOCHS = 3
# The training set as the script's own list (every case): a resume gives it again, and the job
# takes the same names as the run's.
OPTIONS = dict(epochs=EPOCHS, batch=2, patch=16, cases=[f"case_{i:05d}" for i in range(CASES)],
               extra_args=["--checkpoint-interval", "200"])

# A training script as a user writes one: it resumes from its checkpoint where there is one.
# Its checkpoint holds the model, the loader's state and, for the test, the samples trained so
# far. With --crash-after-epoch it saves after that epoch, trains two more batches (lost: never
# saved), waits for a checkpoint of the job, and dies by SIGKILL, leaving the job's pid behind.
SCRIPT = textwrap.dedent("""
    import glob, json, os, signal, sys, time
    import torch
    from minato_flink import launch

    data, run, ckpt, trained_file, report, crash_after = sys.argv[1:7]
    options = json.loads(os.environ["OPTIONS"])
    options["extra_args"] += ["--report", report]
    loader = launch(data, run_dir=run, **options)
    model = torch.nn.Linear(1, 1)
    trained = []
    if os.path.exists(ckpt):
        saved = torch.load(ckpt)
        model.load_state_dict(saved["model"])
        loader.load_state_dict(saved["loader"])
    for epoch in range(loader.epoch, loader.epochs):
        for batch in loader:
            trained += [tuple(s) for s in batch.samples.tolist()]
        if epoch == int(crash_after):
            torch.save({"model": model.state_dict(), "loader": loader.state_dict()}, ckpt)
            with open(trained_file, "w") as f:
                json.dump(trained, f)
            lost = iter(loader)
            for _ in range(2):
                next(lost)
            while not glob.glob(os.path.join(run, "checkpoints", "*", "chk-*", "_metadata")):
                time.sleep(0.05)
            with open(run + ".job-pid", "w") as f:
                f.write(str(loader._job._proc.pid))
            os.kill(os.getpid(), signal.SIGKILL)
    loader.close()
    with open(trained_file, "w") as f:
        json.dump(trained, f)
""")


def run_script(tmp_path, dataset, run, trained_file, crash_after=-1):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), OPTIONS=json.dumps(OPTIONS))
    return subprocess.run(
        [sys.executable, str(script), dataset, run, str(tmp_path / "ckpt.pt"), str(trained_file),
         str(tmp_path / "report.json"), str(crash_after)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)


@pytest.fixture
def killed_run(dataset, tmp_path):
    """A run whose script saved its checkpoint after epoch 0 of 3 and was killed two batches
    later; its job is gone too (killed with it, as a machine's crash takes both)."""
    run = str(tmp_path / "run")
    first = run_script(tmp_path, dataset, run, tmp_path / "trained-1.json", crash_after=0)
    assert first.returncode == -signal.SIGKILL, first.stderr
    kill_job(int(pathlib.Path(run + ".job-pid").read_text()))
    return run


def test_should_continue_a_killed_scripts_run_with_every_sample_trained_once(
        killed_run, dataset, tmp_path):
    second = run_script(tmp_path, dataset, killed_run, tmp_path / "trained-2.json")
    assert second.returncode == 0, second.stderr
    before = [tuple(s) for s in json.loads((tmp_path / "trained-1.json").read_text())]
    after = [tuple(s) for s in json.loads((tmp_path / "trained-2.json").read_text())]
    assert len(before) == CASES  # the checkpoint had the first pass: 3 of the run's 9 steps
    trained = before + after
    assert len(trained) == len(set(trained))
    assert sorted(trained) == [(e, i) for e in range(EPOCHS) for i in range(CASES)]
    # The job continued its run rather than starting another: its report covers the whole run.
    assert "resuming " + killed_run in pathlib.Path(killed_run, "console.log").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["samples"]["delivered"] == EPOCHS * CASES

    # The run finished: launching there again is refused in one line, not a new run.
    with pytest.raises(LoaderError, match="that run finished") as raised:
        next(iter(launch(dataset, run_dir=killed_run, **OPTIONS)))
    assert "\n" not in str(raised.value)


def test_should_refuse_in_one_line_a_launch_that_would_change_what_the_run_trains(
        killed_run, dataset):
    options = dict(OPTIONS, epochs=EPOCHS + 2)
    with pytest.raises(LoaderError, match=r"--epochs 5 would change what the run trains \(it was"
                                          r" started with --epochs 3\)") as raised:
        next(iter(launch(dataset, run_dir=killed_run, **options)))
    assert "\n" not in str(raised.value)


def test_should_refuse_in_one_line_a_state_saved_from_another_run(killed_run, dataset, tmp_path):
    saved = torch.load(tmp_path / "ckpt.pt")["loader"]
    loader = launch(dataset, run_dir=str(tmp_path / "another"), **OPTIONS)
    try:
        loader.load_state_dict(saved)  # the other run's job has not named its run yet
        with pytest.raises(LoaderError, match=r"saved from another run \(run [0-9a-f-]+ in "
                                              + killed_run) as raised:
            next(iter(loader))
        assert "\n" not in str(raised.value)
    finally:
        loader.close()
    # Where the run directory names its run already, load_state_dict() refuses it at once.
    with pytest.raises(LoaderError, match="saved from another run"):
        MinatoLoader(run_dir=str(tmp_path / "another"), rank=0).load_state_dict(saved)
