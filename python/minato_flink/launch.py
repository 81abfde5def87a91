"""Starting the job on this machine (embedded MiniCluster) through the project's launcher."""

import logging
import os
import time
from typing import Any, Callable, List, Optional, Sequence

from . import _job, _run
from ._process import JobProcess, new_run_dir
from .dataset import dataset_args
from .loader import LoaderError, MinatoLoader

_LOG = logging.getLogger("minato_flink")

CASE_LIST = "cases.txt"  # launch(cases=...)'s list in the run directory
_ARCHIVE_AT_EXIT = "-XX:ArchiveClassesAtExit="


class EmbeddedJob:
    """A serving job running in a child process on this machine, for as long as this process
    lives (or until closed); what it prints goes to `log_path`, RUN_DIR/console.log, and what it
    logs through `logging` (see _process)."""

    def __init__(self, args: Sequence[str], run_dir: str) -> None:
        """args: the launcher's subcommand and options; run_dir: the job's run directory, where
        its console and log events go too."""
        self.run_dir = run_dir
        launcher = _job.launcher()
        cmd = launcher.argv + list(args)
        # The class-data archive the packaged job writes as it ends, the first time (_job).
        self._archive = next((a[len(_ARCHIVE_AT_EXIT):] for a in cmd
                              if a.startswith(_ARCHIVE_AT_EXIT)), None)
        self._started = time.time()
        try:
            self._proc = JobProcess(cmd, run_dir, env=launcher.environment())
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
            self._forget_a_poor_archive()
            raise LoaderError(f"the job stopped (exit status {code}): {self._proc.last_error()}")

    def log_now(self) -> None:
        """Logs what the job has said so far before this returns."""
        self._proc.log_now()

    def wait(self, timeout: Optional[float] = None) -> int:
        """The job's exit status once it has exited; raises subprocess.TimeoutExpired after
        `timeout` seconds."""
        code = self._proc.wait(timeout)
        self._forget_a_poor_archive()
        return code

    def close(self, finish_s: float = 0, grace_s: float = 30) -> None:
        """Stops the job if it still runs after `finish_s` seconds (a job whose run ended writes
        its report and exits by itself); its run directory keeps what it wrote, and a run
        stopped early can be continued with --resume. grace_s: how long it has to stop after
        that."""
        self._proc.close(finish_s, grace_s)
        self._forget_a_poor_archive()

    def _forget_a_poor_archive(self) -> None:
        """A job that ended before it served (a wrong path, bad input) has loaded a fraction of
        the classes a start loads: its class-data archive would slow every later start, so it
        is removed, and a later launch writes another."""
        if self._archive is None or self._proc.poll() is None:
            return
        # A rank that serves writes where into RUN_DIR/serving, and removes it as it ends.
        serving = os.path.join(self.run_dir, "serving")
        if not (os.path.isdir(serving) and os.path.getmtime(serving) >= self._started - 1):
            try:
                os.unlink(self._archive)
            except FileNotFoundError:
                pass
        self._archive = None


def launch(data: Optional[str] = None, *, dataset: Any = None,
           collate_fn: Optional[Callable[[List[Any]], Any]] = None, rank: Optional[int] = None, ranks: int = 1, epochs: int = 1,
           batch_size: Optional[int] = None, batch: Optional[int] = None, patch: int = 128,
           run_dir: Optional[str] = None, workers: Optional[int] = None,
           seed: Optional[int] = None, drop_last: bool = False, extra_args: Sequence[str] = (),
           prefetch: int = 2, pin_memory: Optional[bool] = None,
           cases: Optional[Sequence[str]] = None, **loader_kw: Any) -> MinatoLoader:
    """Starts the serving job on this machine (rank 0) and returns rank `rank`'s MinatoLoader.

    data: the data folder of a built-in workload (kits19's .npy pairs; --workload images in
    extra_args for a folder of class folders); or dataset: any map-style Dataset, prepared by
    the job's Python workers, each pass then yielding what collate_fn (default: torch's
    default_collate) makes of a batch's samples. rank: this process's rank (default: torchrun's
    RANK, else 0). ranks: the training processes, one device queue each. epochs: the run's
    epochs, a pass over the loader each. batch_size: samples a batch holds (the job's --batch,
    default 2; `batch` is its other name). patch: the edge of a training crop (--patch).
    run_dir: the job's run directory, its checkpoints, logs and temporary files (default: a new
    runs/<time> in the working directory; several ranks give the same one). workers, seed:
    the job's --workers and --seed (default: the job's). drop_last: leave out the run's last
    batch when it holds fewer than batch_size samples, as a DataLoader's drop_last does. cases:
    with data, the training set as a list of names (kits19 case_00002; images a path under
    data, class_01/x.jpg), the folder's others held out, so that a script keeps its own split
    (the job's --cases; default: the folder but its last --eval-cases). extra_args: further
    options of the job's train command. prefetch, pin_memory, loader_kw: MinatoLoader's.

    With several ranks (torchrun), every rank calls this with the same `run_dir`: rank 0 starts
    the job, the others connect to it. Closing rank 0's loader stops the job, and so does rank
    0's process ending, however it ends.

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
        run_dir = new_run_dir()  # runs/<time> in the working directory, as the job's own
    run_dir = os.path.abspath(run_dir)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    if (data is None) == (dataset is None):
        raise ValueError("give either a data folder or dataset=")
    if cases is not None and data is None:
        raise ValueError("cases= lists samples of a data folder; a dataset= chooses its own")
    job = None
    if rank == 0:
        source = (["--data", os.path.abspath(data), "--patch", str(patch)] if data is not None
                  else dataset_args(dataset, run_dir))
        if cases is not None:
            source += ["--cases", _case_list(cases, run_dir)]
        args = ["train", "--accelerator", "serve", *source,
                "--devices", "cpu" if ranks == 1 else f"cpu:{ranks}",
                "--epochs", str(epochs), "--batch", str(batch_size),
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
        job = EmbeddedJob(args, run_dir)
    return MinatoLoader(run_dir=run_dir, rank=rank, batch_size=batch_size, drop_last=drop_last,
                        prefetch=prefetch, pin_memory=pin_memory, job=job,
                        collate_fn=collate_fn, **loader_kw)


def _case_list(cases: Sequence[str], run_dir: str) -> str:
    """Writes `cases` for the job's --cases, one name a line, into the run directory; a resume
    writes it again, and the job refuses a list that is not the run's."""
    if isinstance(cases, (str, bytes)):
        raise TypeError("cases= takes a list of names, not one string")
    names = list(cases)
    for name in names:
        if not isinstance(name, str) or not name.strip() or name != name.strip() \
                or "\n" in name or "\r" in name or name.startswith("#"):
            raise ValueError(f"cases=: {name!r} is not a sample's name (kits19 case_00002, "
                             f"images class_01/x.jpg)")
    if not names:
        raise ValueError("cases= is empty: it lists the samples to train on")
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, CASE_LIST)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(name + "\n" for name in names))
    return path
