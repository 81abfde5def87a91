"""The embedded job's process: its life tied to this process's, what it says in the run directory
and through `logging`.

The child's standard input is the read end of a pipe whose write end only this process holds, and
the job runs with `--exit-with-stdin`: when this process ends, however it ends (a return, an
exception, SIGTERM, SIGKILL, the OOM killer), the kernel closes the write end, the job reads end of
file and stops (docs/pytorch.md says why a pipe and not a signal). Closing the write end is also
how `close()` stops it.

What the launcher and the job print goes to RUN_DIR/console.log; the job's log messages go, as one
JSON object a line, to RUN_DIR/events.jsonl (`--log-events`). A thread of this process reads both
as they grow and logs them under the `minato_flink` logger: the job's messages under
`minato_flink.job` at their own levels, the launcher's and the command's lines under
`minato_flink.console`, by the one-line convention they follow (`error: ...`, `warning: ...`,
`skipped: ...`, and the launcher's `building minato-flink ...` before it builds).
"""

import json
import logging
import os
import signal
import subprocess
import threading
import time
from typing import Callable, List, Mapping, Optional, Sequence, Set

CONSOLE = "console.log"
EVENTS = "events.jsonl"

_JOB_LOG = logging.getLogger("minato_flink.job")
_CONSOLE_LOG = logging.getLogger("minato_flink.console")

# log4j's levels as logging's.
_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
           "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}

# The console's one-line messages by how they begin; any other line is INFO. A rebuild (the build,
# then the class-data archive) is a warning: it holds the first batch back by a minute or more.
_PREFIXES = (("error:", logging.ERROR), ("warning:", logging.WARNING),
             ("skipped:", logging.WARNING), ("building ", logging.WARNING),
             ("writing the class-data archive", logging.WARNING))

_POLL_S = 0.1

# The write ends of this process's lifelines: a child forked without exec (multiprocessing's fork
# start method) closes them, or a job would outlive this process as long as such a child lives.
_LIFELINES: Set[int] = set()


def _close_lifelines_in_child() -> None:
    for fd in _LIFELINES:
        try:
            os.close(fd)
        except OSError:
            pass
    _LIFELINES.clear()


os.register_at_fork(after_in_child=_close_lifelines_in_child)


class JobProcess:
    """The launcher `cmd` (a train command line) started as a child whose life this process's
    bounds; its console in `run_dir`/console.log, its log events in `run_dir`/events.jsonl, both
    logged here as they come."""

    def __init__(self, cmd: Sequence[str], run_dir: str,
                 env: Optional[Mapping[str, str]] = None) -> None:
        os.makedirs(run_dir, exist_ok=True)
        self.console_path = os.path.join(run_dir, CONSOLE)
        self.events_path = os.path.join(run_dir, EVENTS)
        # A resumed run's files grow on: only what this job writes is logged.
        self._tails: List[_Tail] = [_Tail(self.console_path, _console_line),
                                    _Tail(self.events_path, _event_line)]
        self._reading = threading.Lock()  # the reader thread's and log_now()'s reads
        cmd = list(cmd) + ["--exit-with-stdin", "--log-events", self.events_path]
        read_end, lifeline = os.pipe()  # neither is inherited by other children
        self._lifeline: Optional[int] = lifeline
        _LIFELINES.add(lifeline)
        try:
            with open(self.console_path, "ab") as console:
                self._proc = subprocess.Popen(cmd, stdin=read_end, stdout=console,
                                              stderr=subprocess.STDOUT, start_new_session=True,
                                              env=env)
        except BaseException:
            self._close_lifeline()
            raise
        finally:
            os.close(read_end)
        self.pid = self._proc.pid
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, name="minato-job-output", daemon=True)
        self._reader.start()

    def poll(self) -> Optional[int]:
        return self._proc.poll()

    def log_now(self) -> None:
        """Logs what the job has written so far, before this returns, rather than at the reader
        thread's next look."""
        self._read_tails()

    def wait(self, timeout: Optional[float] = None) -> int:
        code = self._proc.wait(timeout)
        self._drain()
        return code

    def last_error(self) -> str:
        """The job's last `error:` line, else its last line, with where its console is."""
        try:
            with open(self.console_path, errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
        except OSError:
            return f"see {self.console_path}"
        errors = [l for l in lines if l.startswith("error:")]
        last = errors[-1] if errors else (lines[-1] if lines else "no output")
        return f"{last} (log: {self.console_path})"

    def close(self, finish_s: float = 0, grace_s: float = 30) -> None:
        """Stops the job if it still runs after `finish_s` seconds: closing the lifeline cancels
        it (its latest checkpoint stays for --resume) and it exits; a launcher that does not
        exit within `grace_s` (one still building, say) is terminated, then killed, with every
        process in its group."""
        if finish_s > 0:
            try:
                self._proc.wait(finish_s)
            except subprocess.TimeoutExpired:
                pass
        self._close_lifeline()
        try:
            self._proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, None)):
                try:
                    os.killpg(self._proc.pid, sig)
                    self._proc.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
        self._drain()

    def _close_lifeline(self) -> None:
        if self._lifeline is not None:
            _LIFELINES.discard(self._lifeline)
            os.close(self._lifeline)
            self._lifeline = None

    def _read(self) -> None:
        while not self._stop.is_set():
            self._read_tails()
            if self._proc.poll() is not None:
                break
            self._stop.wait(_POLL_S)
        self._read_tails(last=True)

    def _read_tails(self, last: bool = False) -> None:
        with self._reading:
            for t in self._tails:
                t.read(last)

    def _drain(self) -> None:
        """What the job wrote before it exited, logged before this returns."""
        self._stop.set()
        if self._reader is not threading.current_thread():
            self._reader.join(5)


class _Tail:
    """The lines appended to a file since this was made, each handed to `emit` once whole."""

    def __init__(self, path: str, emit: Callable[[str], None]) -> None:
        self._path, self._emit = path, emit
        try:
            self._offset = os.path.getsize(path)
        except OSError:
            self._offset = 0
        self._partial = b""

    def read(self, last: bool = False) -> None:
        try:
            with open(self._path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return  # not written yet
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if last and self._partial:
            lines.append(self._partial)
            self._partial = b""
        for line in lines:
            text = line.decode("utf-8", errors="replace").rstrip()
            if text:
                self._emit(text)


def _console_line(text: str) -> None:
    if text[0].isspace() or text.startswith("Caused by:"):
        level = logging.DEBUG  # a stack trace: its one-line error follows
    else:
        level = next((lv for p, lv in _PREFIXES if text.startswith(p)), logging.INFO)
    _CONSOLE_LOG.log(level, "%s", text)


def _event_line(text: str) -> None:
    try:
        e = json.loads(text)
        level, message = _LEVELS.get(e["level"], logging.INFO), e["message"]
    except (ValueError, KeyError, TypeError):
        _JOB_LOG.info("%s", text)  # not one of the job's events: said as it is
        return
    if e.get("exception"):
        message = f"{message} ({e['exception']})"
    _JOB_LOG.log(level, "%s", message,
                 extra={"job_logger": e.get("logger"), "job_time": e.get("time")})


def new_run_dir(parent: str = "runs") -> str:
    """A new run directory under `parent` (made if needed), named by the time, as the job names
    its own runs and as PyTorch's SummaryWriter names its logs; unique among runs started in the
    same second."""
    os.makedirs(parent, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for k in range(1000):
        path = os.path.join(parent, stamp if k == 0 else f"{stamp}-{k}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: no free run directory name for {stamp}")
