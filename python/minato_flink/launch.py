"""Starting the job on this machine (embedded MiniCluster) through the project's launcher."""

import os
import shlex
import signal
import subprocess
import tempfile

from .dataset import dataset_args
from .loader import LoaderError, MinatoLoader

_REPO_LAUNCHER = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "scripts", "run")


def _launcher():
    """MINATO_LAUNCHER (a command line), else the repository's scripts/run: the one beside this
    package when it is used from the repository (PYTHONPATH=python), else, for a package
    installed with pip, the checkout the script runs in (the working directory or one above)."""
    given = os.environ.get("MINATO_LAUNCHER")
    if given:
        return shlex.split(given)
    path = os.path.normpath(_REPO_LAUNCHER)
    if os.path.exists(path):
        return [path]
    here = os.getcwd()
    while True:
        candidate = os.path.join(here, "scripts", "run")
        if os.path.exists(candidate) and os.path.isdir(os.path.join(here, "python", "minato_flink")):
            return [candidate]
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    raise LoaderError(
        f"no launcher: neither {path} nor a minato-flink checkout at or above {os.getcwd()};"
        " set MINATO_LAUNCHER to a command that takes scripts/run's subcommands")


class EmbeddedJob:
    """A serving job running in a child process on this machine; its output goes to `log_path`."""

    def __init__(self, args, run_dir, log_path):
        self.run_dir, self.log_path = run_dir, log_path
        self._log = open(log_path, "wb")
        cmd = _launcher() + list(args)
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                          stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as err:
            self._log.close()
            raise LoaderError(f"cannot start the job with {cmd[0]}: {err}") from None

    def check(self):
        """Raises the job's own one-line error if it has stopped before its end."""
        code = self._proc.poll()
        if code is not None and code != 0:
            raise LoaderError(f"the job stopped (exit status {code}): {self._last_error()}")

    def _last_error(self):
        try:
            with open(self.log_path, errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
        except OSError:
            return f"see {self.log_path}"
        errors = [l for l in lines if l.startswith("error:")]
        last = errors[-1] if errors else (lines[-1] if lines else "no output")
        return f"{last} (log: {self.log_path})"

    def wait(self, timeout=None):
        return self._proc.wait(timeout)

    def close(self, finish_s=0, grace_s=30):
        """Stops the job if it still runs after `finish_s` seconds (a job whose run ended writes
        its report and exits by itself); its run directory keeps what it wrote."""
        if finish_s > 0:
            try:
                self._proc.wait(finish_s)
            except subprocess.TimeoutExpired:
                pass
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
            except ProcessLookupError:
                pass
        self._log.close()


def launch(data=None, *, dataset=None, collate_fn=None, rank=None, ranks=1, epochs=1, batch=2,
           batch_size=None, patch=128, run_dir=None, workers=None, seed=None, extra_args=(),
           prefetch=2, pin_memory=None, **loader_kw):
    """Starts the serving job on this machine (rank 0) and returns rank `rank`'s MinatoLoader.

    Over the data folder `data` (a built-in workload), or over `dataset`, any map-style Dataset,
    prepared by the job's Python workers: each pass then yields what `collate_fn` (default:
    torch's default_collate) makes of a batch's samples.

    With several ranks (torchrun), every rank calls this with the same `run_dir`: rank 0 starts
    the job, the others connect to it. Closing rank 0's loader stops the job."""
    rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
    if ranks > 1 and run_dir is None:
        raise ValueError("several ranks share one job: give every rank the same run_dir")
    if run_dir is None:
        run_dir = os.path.join(tempfile.mkdtemp(prefix="minato-"), "run")
    run_dir = os.path.abspath(run_dir)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    if (data is None) == (dataset is None):
        raise ValueError("give either a data folder or dataset=")
    batch = batch if batch_size is None else batch_size
    job = None
    if rank == 0:
        source = (["--data", os.path.abspath(data), "--patch", str(patch)] if dataset is None
                  else dataset_args(dataset, run_dir))
        args = ["train", "--accelerator", "serve", *source,
                "--devices", "cpu" if ranks == 1 else f"cpu:{ranks}",
                "--epochs", str(epochs), "--batch", str(batch),
                "--run-dir", run_dir, "--no-web-ui", "--progress-interval", "0", "--no-plots"]
        if workers is not None:
            args += ["--workers", str(workers)]
        if seed is not None:
            args += ["--seed", str(seed)]
        args += list(extra_args)
        job = EmbeddedJob(args, run_dir, run_dir.rstrip("/") + ".log")
    return MinatoLoader(run_dir=run_dir, rank=rank, prefetch=prefetch, pin_memory=pin_memory,
                        job=job, collate_fn=collate_fn, **loader_kw)
