"""The serving job submitted to a session cluster with `flink run`, its process connecting over
TCP with a token as from another host, and a TaskManager killed under it."""

import os
import subprocess
import sys
import time

import pytest

import minato_flink.loader as loader_module
from conftest import REPO
from minato_flink import MinatoLoader

CASES = 6
PORT = 7611


def cluster(*args):
    subprocess.run([os.path.join(REPO, "scripts", "cluster"), *args], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL)


def running_cluster():
    """A session cluster of one TaskManager of 4 slots while the test runs."""
    cluster("start", "--taskmanagers", "1", "--slots", "4")
    try:
        yield
    finally:
        cluster("stop")


@pytest.fixture
def session_cluster():
    yield from running_cluster()


def test_should_serve_every_sample_once_over_tcp_across_a_lost_taskmanager(
        dataset, tmp_path, session_cluster, monkeypatch):
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    subprocess.run([os.path.join(REPO, "scripts", "flink"), "run", "-d",
                    os.path.join(REPO, "job", "target", "minato-job.jar"), "train",
                    "--data", dataset, "--patch", "16", "--epochs", "60", "--devices", "cpu",
                    "--accelerator", f"serve:{PORT}", "--serve-bind", "0.0.0.0",
                    "--serve-token-file", str(token), "--eval-cases", "0",
                    "--checkpoint-interval", "300", "--run-dir", str(tmp_path / "run")],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    monkeypatch.setattr(loader_module, "_SHM", str(tmp_path / "no-shared-memory"))  # TCP
    loader = MinatoLoader(f"127.0.0.1:{PORT}", rank=0, token="t0ken", connect_timeout_s=120,
                          reconnect_s=180)
    seen = []
    batches = (b for _ in range(60) for b in loader)  # a pass per epoch
    for step, batch in enumerate(batches):
        seen += [tuple(s) for s in batch.samples.tolist()]
        time.sleep(0.01)
        if step == 60:
            cluster("kill-taskmanager", "1")
    assert loader._welcome["mode"] == "tcp"
    assert len(seen) == len(set(seen))
    assert sorted(seen) == [(e, i) for e in range(60) for i in range(CASES)]


@pytest.fixture
def python_cluster(monkeypatch):
    # The TaskManagers' Python workers import minato_flink and the tests' datasets module.
    monkeypatch.setenv("MINATO_PYTHONPATH", os.pathsep.join(
        [os.path.join(REPO, "python"), os.path.join(REPO, "python", "tests")]))
    yield from running_cluster()


def test_should_serve_a_python_dataset_every_sample_once_across_a_lost_taskmanager(
        tmp_path, python_cluster):
    port, epochs = PORT + 10, 40
    subprocess.run([os.path.join(REPO, "scripts", "flink"), "run", "-d",
                    os.path.join(REPO, "job", "target", "minato-job.jar"), "train",
                    "--workload", "python", "--dataset", "datasets:make_volumes",
                    "--python", sys.executable, "--epochs", str(epochs), "--batch", "2",
                    "--devices", "cpu", "--accelerator", f"serve:{port}",
                    "--checkpoint-interval", "300", "--run-dir", str(tmp_path / "run")],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    loader = MinatoLoader(f"127.0.0.1:{port}", rank=0, connect_timeout_s=120, reconnect_s=180)
    seen = []
    batches = (b for _ in range(epochs) for b in loader)  # a pass per epoch
    for step, batch in enumerate(batches):
        image, label = batch
        # Each sample's volume is filled with its Dataset index: the bytes are the sample's.
        assert batch.cases == [str(round(float(x.mean()))) for x in image]
        seen += [tuple(s) for s in batch.samples.tolist()]
        time.sleep(0.01)
        if step == 30:
            cluster("kill-taskmanager", "1")
    assert len(seen) == len(set(seen))
    assert sorted(seen) == [(e, i) for e in range(epochs) for i in range(6)]
