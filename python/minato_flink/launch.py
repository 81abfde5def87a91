"""Starting the job on this machine (embedded MiniCluster) through the project's launcher."""

import logging
import os
import signal
import subprocess
import tempfile
from typing import Any, List, Optional, Sequence

from . import _job, _run
from .loader import LoaderError, MinatoLoader

_LOG = logging.getLogger("minato_flink")


class EmbeddedJob:
    """A serving job running in a child process on this machine; its output goes to `log_path`."""

    def __init__(self, args: Sequence[str], run_dir: str, log_path: str) -> None:
        """args: the launcher's subcommand and options; run_dir: the job's run directory;
        log_path: where its output goes."""
        self.run_dir, self.log_path = run_dir, log_path
        launcher = _job.launcher()
        self._log = open(log_path, "wb")
        cmd = launcher.argv + list(args)
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                          stderr=subprocess.STDOUT, start_new_session=True,
                                          env=launcher.environment())
        except OSError as err:
            self._log.close()
            raise LoaderError(f"cannot start the job with {cmd[0]}: {err}") from None

    def check(self) -> None:
        """Raises the job's own one-line error if it has stopped before its end."""
        code = self._proc.poll()
        if code is not None and code != 0:
            raise LoaderError(f"the job stopped (exit status {code}): {self._last_error()}")

    def _last_error(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
        except OSError:
            return f"see {self.log_path}"
        errors = [l for l in lines if l.startswith("error:")]
        last = errors[-1] if errors else (lines[-1] if lines else "no output")
        return f"{last} (log: {self.log_path})"

    def wait(self, timeout: Optional[float] = None) -> int:
        """The job's exit status once it has exited; raises subprocess.TimeoutExpired after
        `timeout` seconds."""
        return self._proc.wait(timeout)

    def close(self, finish_s: float = 0, grace_s: float = 30) -> None:
        """Stops the job if it still runs after `finish_s` seconds (a job whose run ended writes
        its report and exits by itself); its run directory keeps what it wrote. grace_s: how long
        SIGTERM has before SIGKILL."""
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


def launch(data: str, *, rank: Optional[int] = None, ranks: int = 1, epochs: int = 1,
           batch_size: Optional[int] = None, batch: Optional[int] = None, patch: int = 128,
           run_dir: Optional[str] = None, workers: Optional[int] = None,
           seed: Optional[int] = None, drop_last: bool = False, extra_args: Sequence[str] = (),
           prefetch: int = 2, pin_memory: Optional[bool] = None,
           **loader_kw: Any) -> MinatoLoader:
    """Starts the serving job on this machine (rank 0) and returns rank `rank`'s MinatoLoader.

    data: the data folder of a built-in workload (kits19's .npy pairs; --workload images in
    extra_args for a folder of class folders). rank: this process's rank (default: torchrun's
    RANK, else 0). ranks: the training processes, one device queue each. epochs: the run's
    epochs, a pass over the loader each. batch_size: samples a batch holds (the job's --batch,
    default 2; `batch` is its other name). patch: the edge of a training crop (--patch).
    run_dir: the job's run directory (default: a new temporary one; several ranks give the same
    one). workers, seed: the job's --workers and --seed (default: the job's). drop_last: leave
    out the run's last batch when it holds fewer than batch_size samples, as a DataLoader's
    drop_last does. extra_args: further options of the job's train command. prefetch,
    pin_memory, loader_kw: MinatoLoader's.

    With several ranks (torchrun), every rank calls this with the same `run_dir`: rank 0 starts
    the job, the others connect to it. Closing rank 0's loader stops the job.

    A `run_dir` that holds a run (a script restarted from its checkpoint) continues that run
    (the job's --resume): the loader then takes the state saved with the model's checkpoint
    (load_state_dict) and gets exactly what it has not seen. The options given must be the run's,
    but for those that change how it runs, not what it trains (the job refuses others in one
    line). A run that finished, or has no complete checkpoint yet, is refused in one line too:
    another run_dir starts afresh."""
    if batch_size is not None and batch is not None and batch_size != batch:
        raise ValueError(f"batch_size={batch_size} and batch={batch}: batch is batch_size's "
                         f"other name, give one")
    batch_size = batch_size if batch_size is not None else batch if batch is not None else 2
    rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
    if ranks > 1 and run_dir is None:
        raise ValueError("several ranks share one job: give every rank the same run_dir")
    if run_dir is None:
        run_dir = os.path.join(tempfile.mkdtemp(prefix="minato-"), "run")
    run_dir = os.path.abspath(run_dir)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    job = None
    if rank == 0:
        args = ["train", "--accelerator", "serve", "--data", os.path.abspath(data),
                "--devices", "cpu" if ranks == 1 else f"cpu:{ranks}",
                "--epochs", str(epochs), "--batch", str(batch_size), "--patch", str(patch),
                "--run-dir", run_dir, "--no-web-ui", "--progress-interval", "0", "--no-plots"]
        if workers is not None:
            args += ["--workers", str(workers)]
        if seed is not None:
            args += ["--seed", str(seed)]
        args += list(extra_args)
        if _run.holds_run(run_dir):
            args = _run.resume_args(args, run_dir)
            _LOG.info("continuing the run in %s (--resume): give the loader the state saved with"
                      " the model (load_state_dict) before the first batch", run_dir)
        job = EmbeddedJob(args, run_dir, run_dir.rstrip("/") + ".log")
    return MinatoLoader(run_dir=run_dir, rank=rank, batch_size=batch_size, drop_last=drop_last,
                        prefetch=prefetch, pin_memory=pin_memory, job=job, **loader_kw)
