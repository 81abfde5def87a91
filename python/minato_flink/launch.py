"""Starting the job on this machine (embedded MiniCluster) through the project's launcher."""

import logging
import os
import signal
import subprocess
import tempfile

from . import _job, _run
from .loader import LoaderError, MinatoLoader

_LOG = logging.getLogger("minato_flink")


class EmbeddedJob:
    """A serving job running in a child process on this machine; its output goes to `log_path`."""

    def __init__(self, args, run_dir, log_path):
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


def launch(data, *, rank=None, ranks=1, epochs=1, batch=2, patch=128, run_dir=None,
           workers=None, seed=None, extra_args=(), prefetch=2, pin_memory=None, **loader_kw):
    """Starts the serving job on this machine (rank 0) and returns rank `rank`'s MinatoLoader.

    With several ranks (torchrun), every rank calls this with the same `run_dir`: rank 0 starts
    the job, the others connect to it. Closing rank 0's loader stops the job.

    A `run_dir` that holds a run (a script restarted from its checkpoint) continues that run
    (the job's --resume): the loader then takes the state saved with the model's checkpoint
    (load_state_dict) and gets exactly what it has not seen. The options given must be the run's,
    but for those that change how it runs, not what it trains (the job refuses others in one
    line). A run that finished, or has no complete checkpoint yet, is refused in one line too:
    another run_dir starts afresh."""
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
                "--epochs", str(epochs), "--batch", str(batch), "--patch", str(patch),
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
    return MinatoLoader(run_dir=run_dir, rank=rank, prefetch=prefetch, pin_memory=pin_memory,
                        job=job, **loader_kw)
