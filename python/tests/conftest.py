"""The Python package's tests run the real job (scripts/run, or MINATO_LAUNCHER) on a tiny
generated data set: small patches, a few cases, seconds per job."""

import os
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(REPO, "python"))


def kill_job(pid, timeout_s=30):
    """Kills the job whose launcher is `pid` with its process group, as a machine's crash takes a
    killed script's job too, and returns once it is gone; fails after `timeout_s`."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it ended with its script
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"job {pid} outlived its killed script by {timeout_s} s")


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "kits"
    subprocess.run([os.path.join(REPO, "scripts", "run"), "generate", "--out", str(out),
                    "--cases", "6", "--scale", "0.1", "--seed", "3"],
                   check=True, stdout=subprocess.DEVNULL)
    return str(out)


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    """12 generated images of 3 classes, JPEG and PNG, 64 to 1,024 pixels a side."""
    out = tmp_path_factory.mktemp("data") / "images"
    subprocess.run([os.path.join(REPO, "scripts", "run"), "generate", "--workload", "images",
                    "--out", str(out), "--cases", "12", "--classes", "3", "--seed", "3"],
                   check=True, stdout=subprocess.DEVNULL)
    return out


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    """launch() without run_dir makes runs/<time> in the working directory: the test's own."""
    monkeypatch.chdir(tmp_path)
