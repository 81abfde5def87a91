"""MinatoLoader against the real serving job: every (epoch, index) once, across a training
process's crash and the job's own, and the refusals a user meets."""

import csv
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from conftest import REPO
from minato_flink import LoaderError, MinatoLoader, _job, launch

CASES = 6  # the dataset fixture's


def run_samples(epochs, ranks=1):
    total = epochs * CASES
    return total - total % ranks


def ids(batch):
    return [tuple(s) for s in batch.samples.tolist()]


def every_batch(loader):
    """The rest of the run: a pass over the loader per epoch, as a training loop makes them."""
    while loader.epoch < loader.epochs:
        yield from loader


def test_should_yield_one_epoch_a_pass_every_sample_once_as_tensors_in_full_batches(dataset):
    with launch(dataset, epochs=3, batch_size=4, patch=16,
                extra_args=["--eval-cases", "0"]) as loader:
        seen, sizes, passes = [], [], []
        for epoch in range(3):
            assert loader.epoch == epoch
            steps = len(loader)
            passes.append(0)
            for batch in loader:
                image, label = batch
                assert image.dtype == torch.float32
                assert image.shape[1:] == (1, 16, 16, 16)
                assert label.dtype == torch.uint8 and label.shape == image.shape
                assert set(batch.paths) <= {"fast", "slow"}
                assert int(label.max()) <= 2
                seen += ids(batch)
                sizes.append(len(batch.samples))
                passes[-1] += 1
            assert passes[-1] == steps
        assert list(loader) == []  # the run had 3 epochs
        assert loader._job.wait(60) == 0
    assert sorted(seen) == [(e, i) for e in range(3) for i in range(CASES)]
    # 18 samples in batches of 4: 5 steps, shared out over 3 epochs, the first ones first.
    assert sizes == [4, 4, 4, 4, 2] and passes == [2, 2, 1] and loader.run_steps == 5


def test_should_serve_a_restarted_process_exactly_what_its_checkpoint_lacks(dataset, tmp_path):
    run = str(tmp_path / "run")
    first = launch(dataset, epochs=4, batch_size=2, patch=16, run_dir=run,
                   extra_args=["--eval-cases", "0"])
    job = first._job
    first._job = None  # the job outlives this process's loader, as a restarted script finds it
    before, state = [], None
    for step, batch in enumerate(every_batch(first)):
        before += ids(batch)
        if step == 2:
            state = first.state_dict()
            kept = list(before)
        if step == 4:
            break  # two more batches trained, then the process "crashes" before its checkpoint
    first.close()

    second = MinatoLoader(run_dir=run, rank=0)
    second.load_state_dict(state)
    assert second.epoch == 0  # the state was saved in the first epoch's pass of 3 steps
    after = [s for batch in every_batch(second) for s in ids(batch)]
    second.close()
    assert job.wait(60) == 0
    job.close()
    trained = kept + after
    assert sorted(trained) == [(e, i) for e in range(4) for i in range(CASES)]
    assert set(before) - set(kept) <= set(after)  # the lost batches came again


def test_should_refuse_a_second_process_for_the_same_rank(dataset):
    # batch=, batch_size's other name
    with launch(dataset, epochs=2, batch=2, patch=16, extra_args=["--eval-cases", "0"]) as loader:
        it = iter(loader)
        next(it)
        other = MinatoLoader(run_dir=loader._run_dir, rank=0, connect_timeout_s=10)
        with pytest.raises(LoaderError, match="already served to the training process"):
            next(iter(other))
        rest = sum(1 for _ in it)
        assert rest == len(loader) - 1


def test_should_refuse_a_process_without_the_token(dataset, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    loader = launch(dataset, epochs=1, batch_size=2, patch=16,
                    extra_args=["--eval-cases", "0", "--serve-token-file", str(token)])
    job = loader._job
    try:
        intruder = MinatoLoader(run_dir=job.run_dir, rank=0, token="guess", connect_timeout_s=30)
        with pytest.raises(LoaderError, match="wrong or missing token"):
            next(iter(intruder))
        good = MinatoLoader(run_dir=job.run_dir, rank=0, token="s3cret")
        assert sum(len(b.samples) for b in good) == run_samples(1)
    finally:
        loader.close()


def test_should_stop_in_one_line_when_the_job_cannot_start(tmp_path):
    with pytest.raises(LoaderError, match=r"the job stopped .*error: .*does-not-exist"):
        loader = launch(str(tmp_path / "does-not-exist"), epochs=1, patch=16)
        next(iter(loader))


def test_should_raise_the_jobs_one_line_when_a_file_goes_bad_mid_run(dataset, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    trained = 0
    # The job stops at the first sample that meets it, without restarts: a worker that maps the
    # file anew finds no array, one that had it mapped finds it changed.
    with pytest.raises(LoaderError, match=r"exit status 3\): error: .*case_00002_x\.npy: (not a "
                                          r"\.npy file|changed while the run read it)") as raised:
        with launch(str(data), epochs=6, batch_size=2, patch=16,
                    extra_args=["--eval-cases", "0"]) as loader:
            for batch in every_batch(loader):
                if trained == 0:
                    (data / "case_00002_x.npy").write_bytes(b"rewritten, not an array")
                trained += len(batch.samples)
    assert "\n" not in str(raised.value)
    assert trained < 6 * CASES


def test_should_keep_every_sample_once_when_the_job_fails_and_resumes(dataset, tmp_path, caplog):
    """kill -9 of the job process mid-run, then --resume: the process reconnects and the job
    serves what its checkpoint and the process's consumed samples leave, nothing twice."""
    run = str(tmp_path / "run")
    loader = launch(dataset, epochs=40, batch_size=2, patch=16, run_dir=run, reconnect_s=180,
                    extra_args=["--eval-cases", "0", "--checkpoint-interval", "200"])
    job = loader._job
    loader._job = None
    seen = []
    resumed = None
    try:
        for step, batch in enumerate(every_batch(loader)):
            seen += ids(batch)
            time.sleep(0.02)
            if step == 30:
                os.killpg(job._proc.pid, signal.SIGKILL)
                job.wait(30)
                log = open(run + ".resume.log", "wb")
                resumed = subprocess.Popen(
                    [os.path.join(REPO, "scripts", "run"), "train", "--resume", run,
                     "--no-web-ui", "--progress-interval", "0"],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        assert resumed is not None and resumed.wait(120) == 0
    finally:
        loader.close()
        if resumed is not None and resumed.poll() is None:
            os.killpg(resumed.pid, signal.SIGKILL)
    assert len(seen) == len(set(seen))
    assert sorted(seen) == [(e, i) for e in range(40) for i in range(CASES)]
    lost = [r.getMessage() for r in caplog.records if "lost the job" in r.getMessage()]
    assert lost and lost[0].startswith("rank 0: lost the job (")


def latest_checkpoint(run):
    """The newest checkpoint's number, of run/checkpoints/<job id>/chk-N; -1: none yet. (RocksDB's
    snapshots under way, chk-N.tmp in the TaskManager's tmp folder, are not checkpoints.)"""
    names = [p.name[len("chk-"):] for p in pathlib.Path(run, "checkpoints").glob("*/chk-*")]
    return max((int(n) for n in names if n.isdigit()), default=-1)


def test_should_go_on_checkpointing_while_no_process_is_connected(dataset, tmp_path):
    run = str(tmp_path / "run")
    loader = launch(dataset, epochs=200, batch_size=2, patch=16, run_dir=run,
                    extra_args=["--eval-cases", "0", "--checkpoint-interval", "300"])
    job = loader._job
    loader._job = None
    try:
        it = every_batch(loader)
        for _ in range(10):
            next(it)
        state = loader.state_dict()
        loader.close_connection()  # the process is gone; its queue fills and waits
        time.sleep(1.5)
        before = latest_checkpoint(run)
        # While the queue is full and no process takes from it, the sink's write runs its task's
        # mail, checkpoint barriers among it: a checkpoint every 300 ms, about 26 in 8 s here. A
        # task that reached its barriers only when the sink took a batch beyond its depth, once a
        # second, would give at most 9; a job that stopped checkpointing gives none.
        time.sleep(8)
        assert latest_checkpoint(run) >= before + 12
        back = MinatoLoader(run_dir=run, rank=0)
        back.load_state_dict(state)
        assert sum(len(b.samples) for b in every_batch(back)) == 200 * CASES - 20
    finally:
        job.close()


def test_should_leave_the_runs_last_odd_sample_out_of_two_ranks_and_of_the_report(dataset, tmp_path):
    """5 training cases x 3 epochs over 2 ranks: 7 samples each; the 15th is trained by neither, so
    the job's report counts it dropped and its trace does not list it."""
    run, report, trace_file = str(tmp_path / "run"), tmp_path / "r.json", tmp_path / "t.csv"
    loaders = [launch(dataset, rank=0, ranks=2, epochs=3, batch_size=2, patch=16, run_dir=run,
                      extra_args=["--eval-cases", "1", "--report", str(report),
                                  "--trace", str(trace_file)])]
    loaders.append(MinatoLoader(run_dir=run, rank=1))
    seen = [[], []]

    def take(rank):
        seen[rank] += [s for batch in every_batch(loaders[rank]) for s in ids(batch)]

    threads = [threading.Thread(target=take, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    job = loaders[0]._job
    assert job.wait(60) == 0
    for loader in loaders:
        loader.close()
    assert len(seen[0]) == len(seen[1]) == 7
    trained = sorted(seen[0] + seen[1])
    assert len(set(trained)) == 14
    samples = json.loads(report.read_text())["samples"]
    assert (samples["delivered"], samples["dropped"]) == (14, 1)
    with open(trace_file) as f:
        traced = sorted((int(r["epoch"]), int(r["index"])) for r in csv.DictReader(f))
    assert traced == trained


def test_should_find_the_checkouts_launcher_for_a_package_installed_elsewhere(tmp_path, monkeypatch):
    monkeypatch.delenv("MINATO_LAUNCHER", raising=False)
    monkeypatch.setattr(_job, "_CHECKOUT_LAUNCHER", str(tmp_path / "site" / "scripts" / "run"))
    monkeypatch.setattr(_job, "PACKAGED", str(tmp_path / "site" / "minato_flink" / "job"))
    monkeypatch.chdir(os.path.join(REPO, "python", "tests"))  # a script run inside the checkout
    assert _job.launcher().argv == [os.path.join(REPO, "scripts", "run")]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LoaderError, match=r"no launcher: .*set MINATO_LAUNCHER"):
        _job.launcher()
