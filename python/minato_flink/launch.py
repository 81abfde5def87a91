"""Starting the job on this machine (embedded MiniCluster) through the project's launcher."""

import os
import shlex
from typing import Optional, Sequence

from ._process import JobProcess, new_run_dir
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
    """A serving job running in a child process on this machine, for as long as this process
    lives (or until closed); what it prints goes to `log_path`, RUN_DIR/console.log, and what it
    logs through `logging` (see _process)."""

    def __init__(self, args: Sequence[str], run_dir: str) -> None:
        self.run_dir = run_dir
        cmd = _launcher() + list(args)
        try:
            self._proc = JobProcess(cmd, run_dir)
        except OSError as err:
            raise LoaderError(f"cannot start the job with {cmd[0]}: {err}") from None
        self.log_path = self._proc.console_path

    @property
    def pid(self) -> int:
        """The launcher's process id (the job's JVM once scripts/run has built what it needs)."""
        return self._proc.pid

    def check(self) -> None:
        """Raises the job's own one-line error if it has stopped before its end."""
        code = self._proc.poll()
        if code is not None and code != 0:
            raise LoaderError(f"the job stopped (exit status {code}): {self._proc.last_error()}")

    def wait(self, timeout: Optional[float] = None) -> int:
        return self._proc.wait(timeout)

    def close(self, finish_s: float = 0, grace_s: float = 30) -> None:
        """Stops the job if it still runs after `finish_s` seconds (a job whose run ended writes
        its report and exits by itself); its run directory keeps what it wrote, and a run
        stopped early can be continued with --resume."""
        self._proc.close(finish_s, grace_s)


def launch(data, *, rank=None, ranks=1, epochs=1, batch=2, patch=128, run_dir=None,
           workers=None, seed=None, extra_args=(), prefetch=2, pin_memory=None, **loader_kw):
    """Starts the serving job on this machine (rank 0) and returns rank `rank`'s MinatoLoader.

    The job keeps its checkpoints, logs and temporary files in `run_dir` (default: a new
    runs/<time> in the working directory). With several ranks (torchrun), every rank calls this
    with the same `run_dir`: rank 0 starts the job, the others connect to it. Closing rank 0's
    loader stops the job, and so does rank 0's process ending, however it ends."""
    rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
    if ranks > 1 and run_dir is None:
        raise ValueError("several ranks share one job: give every rank the same run_dir")
    if run_dir is None:
        run_dir = new_run_dir()  # runs/<time> in the working directory, as the job's own
    run_dir = os.path.abspath(run_dir)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    job = None
    if rank == 0:
        args = ["train", "--accelerator", "serve", "--data", os.path.abspath(data),
                "--devices", "cpu" if ranks == 1 else f"cpu:{ranks}",
                "--epochs", str(epochs), "--batch", str(batch), "--patch", str(patch),
                "--run-dir", run_dir, "--no-web-ui", "--progress-interval", "0", "--no-plots"]
        if workers is not None:
            args += ["--workers", str(workers)]
        if seed is not None:
            args += ["--seed", str(seed)]
        args += list(extra_args)
        job = EmbeddedJob(args, run_dir)
    return MinatoLoader(run_dir=run_dir, rank=rank, prefetch=prefetch, pin_memory=pin_memory,
                        job=job, **loader_kw)
