"""The embedded job never outlives the training process that launched it: however the script
ends (a return without close(), an exception, SIGTERM, SIGKILL mid-pass), the job's JVM and
anything it started are gone within seconds, and nothing is left in the run's temporary folder."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO

# A training loop over the real job that says which process runs the job once it has a batch,
# then ends as told.
SCRIPT = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
from minato_flink import launch

how, data, run = sys.argv[1:4]
loader = launch(data, epochs=50, batch=2, patch=16, run_dir=run, extra_args=["--eval-cases", "0"])
batches = iter(loader)
next(batches)
print(json.dumps({"pid": loader._job._proc.pid}), flush=True)
if how == "raise":
    raise RuntimeError("the training step failed")
if how == "return":
    sys.exit(0)  # no close(), no atexit, no finally
for batch in batches:  # mid-pass when the signal comes
    time.sleep(0.05)
"""

GONE_WITHIN_S = 15


def alive(pid):
    """Whether `pid` runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def with_descendants(pid):
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            pass
    return tree


@pytest.mark.parametrize("how", ["return", "raise", "SIGTERM", "SIGKILL"])
def test_should_stop_the_job_when_the_training_process_ends(how, dataset, tmp_path):
    run = tmp_path / "run"
    err = open(tmp_path / "script.err", "wb")
    script = subprocess.Popen([sys.executable, "-c", SCRIPT, how, dataset, str(run),
                               os.path.join(REPO, "python")],
                              stdout=subprocess.PIPE, stderr=err, text=True)
    pid = None
    try:
        said = script.stdout.readline()
        assert said, f"the script ended before its first batch: {(tmp_path / 'script.err').read_text()}"
        pid = json.loads(said)["pid"]
        with open(f"/proc/{pid}/comm") as f:
            assert f.read().strip() == "java"  # scripts/run execs the JVM: its pid is the job's
        job = with_descendants(pid)
        if how.startswith("SIG"):
            script.send_signal(getattr(signal, how))
        script.wait(60)
        assert script.returncode == {"return": 0, "raise": 1, "SIGTERM": -signal.SIGTERM,
                                     "SIGKILL": -signal.SIGKILL}[how]
        ended = time.monotonic()
        while any(alive(p) for p in job) and time.monotonic() - ended < GONE_WITHIN_S:
            time.sleep(0.1)
        left = sorted(p for p in job if alive(p))
        assert not left, f"the job's processes {left} outlived the script by {GONE_WITHIN_S} s"
        print(f"{how}: the job was gone {time.monotonic() - ended:.1f} s after the script")
        assert not (run / "tmp").exists(), sorted(os.listdir(run / "tmp"))
        assert (run / "run-args").exists()  # a run that --resume continues
    finally:
        if script.poll() is None:
            script.kill()
        if pid is not None and alive(pid):
            os.killpg(pid, signal.SIGKILL)
        err.close()
