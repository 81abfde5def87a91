"""The training process's side of a minato-flink serving job: a DataLoader-like iterator."""

from __future__ import annotations

import json
import logging
import mmap
import os
import queue
import secrets
import socket
import struct
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Protocol, Tuple, Union

import numpy as np
import torch

from . import _run
from . import samples as python_samples
from .consumed import ConsumedSet
from .samples import SampleBatch

_LOG = logging.getLogger("minato_flink")

PROTOCOL_VERSION = 2  # 2: the hello is small and answered before the consumed samples go
_STATE_VERSION = 1  # of state_dict(), which the protocol's version does not change
_SHM = "/dev/shm"
_DTYPES = {"float32": torch.float32, "uint8": torch.uint8, "int32": torch.int32}
_SIZES = {"float32": 4, "uint8": 1, "int32": 4}

Device = Union[torch.device, str]


class _End:
    """The run's end, as the receiving thread hands it over."""


_END = _End()


class Job(Protocol):
    """What a loader needs of a job it stops when closed (launch()'s EmbeddedJob)."""

    def check(self) -> None:
        """Raises a one-line LoaderError if the job has stopped before its end."""

    def close(self, finish_s: float = 0) -> None:
        """Stops the job if it still runs after finish_s seconds."""

    def log_now(self) -> None:
        """Logs what the job has said so far before this returns."""


class LoaderError(RuntimeError):
    """The job refused this process, broke the protocol, or could not be reached: one line."""


class LoaderWarning(UserWarning):
    """What a script should know but need not stop for, in one line: a pass that yields fewer
    batches than len(loader) said, or an epoch given to sampler.set_epoch() that is not the
    loader's."""


class Batch(Tuple[torch.Tensor, ...]):
    """One training step's batch: a tuple of the samples' fields, collated as DataLoader's default
    collate makes them, that also says which samples it holds.

    For the built-in workloads it is (image, label): kits19's image is float32 (B, 1, D, H, W) and
    its label uint8 of the same shape; images' image is float32 (B, C, H, W) and its label int64
    (B,) classes. So `image, label = batch` and `for i, (image, label) in enumerate(loader)` work
    as with a DataLoader, and len(batch) is the number of fields, as a tuple's.

    samples: int64 (B, 2), each sample's (epoch, index) in the job's run. cases: each sample's
    source (the case number, or the image's path under the data folder). paths: "fast" or "slow",
    the path each sample took. step: this rank's step, from 0, on the connection that served it.
    """

    samples: torch.Tensor
    cases: List[str]
    paths: List[str]
    step: int

    def __new__(cls, fields: Iterable[torch.Tensor], *, samples: torch.Tensor,
                cases: List[str], paths: List[str], step: int) -> Batch:
        """fields: the collated tensors; samples, cases, paths, step: which samples they hold, as
        the class says."""
        batch = tuple.__new__(cls, fields)
        batch.samples, batch.cases, batch.paths, batch.step = samples, cases, paths, step
        return batch

    def __getnewargs_ex__(self) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
        # pickle and copy build a tuple subclass through __new__: give it the samples too.
        return (tuple(self),), {"samples": self.samples, "cases": self.cases,
                                "paths": self.paths, "step": self.step}

    def to(self, device: Device, non_blocking: bool = True) -> Batch:
        """The same batch with its fields on `device` (its samples' identities stay as they are).

        device: a torch device, or what torch.device takes. non_blocking: copy without waiting
        for the device; from the pinned memory the loader uses where CUDA is, the copies then do
        not block the host."""
        return Batch((f.to(device, non_blocking=non_blocking) if isinstance(f, torch.Tensor) else f
                      for f in self), samples=self.samples, cases=self.cases, paths=self.paths,
                     step=self.step)


def _identified(batch: SampleBatch) -> Any:
    """What iterating yields of a Python Dataset's batch: a Batch, with the samples' identities,
    where the collate made a plain tuple or list (default_collate makes a list of tuple samples'
    fields; the Batch is a tuple of them); anything else as the collate made it (a dict, a
    tensor, a namedtuple keep their type)."""
    c = batch.collated
    if type(c) in (tuple, list):
        return Batch(c, samples=batch.samples, cases=batch.cases, paths=batch.paths,
                     step=batch.step)
    return c


class _Connection:
    """One connection to a rank's device queue: length-prefixed JSON frames, a batch's bytes after
    its header over TCP, or the slot files the job names, mapped once."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)
        self.maps: Dict[str, mmap.mmap] = {}

    def send(self, header: Mapping[str, Any]) -> None:
        body = json.dumps(header, separators=(",", ":")).encode()
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def _exactly(self, n: int, into: Optional[np.ndarray[Any, Any]] = None) -> memoryview:
        view = memoryview(into.data if into is not None else bytearray(n)).cast("B")
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionError("the job closed the connection")
            got += k
        return view

    def receive(self) -> Dict[str, Any]:
        (n,) = struct.unpack(">I", self._exactly(4))
        if n < 2 or n > 64 << 20:
            raise LoaderError(f"a frame of {n} bytes: not a minato-flink job")
        try:
            message = json.loads(bytes(self._exactly(n)))
        except ValueError as err:
            raise LoaderError(f"a frame that is not JSON ({err}): not a minato-flink job") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise LoaderError("a frame without a message type: not a minato-flink job")
        return message

    def read_into(self, array: np.ndarray[Any, Any]) -> None:
        self._exactly(array.nbytes, array)

    def slot(self, path: str, nbytes: int) -> mmap.mmap:
        held = self.maps.get(path)
        if held is None or len(held) < nbytes:
            if held is not None:
                held.close()
            fd = os.open(path, os.O_RDONLY)
            try:
                held = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            finally:
                os.close(fd)
            self.maps[path] = held
        return held

    def close(self) -> None:
        try:
            # Wakes a thread that waits in recv() on this socket; close() alone would not.
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        for m in self.maps.values():
            try:
                m.close()
            except BufferError:
                pass  # the receiving thread still copies out of it: it goes with its last view
        self.maps.clear()


class ServedDataset:
    """DataLoader's `dataset` for a loader fed by the job, which reads and prepares the samples
    itself: there is nothing to index, and len() is the samples of one epoch of the job's run,
    over all ranks (the training cases or images; known once connected)."""

    def __init__(self, loader: MinatoLoader) -> None:
        """loader: the loader whose job this stands for."""
        self._loader = loader

    def __len__(self) -> int:
        return self._loader._epoch_samples()


class ServedSampler:
    """DataLoader's `sampler` (a DistributedSampler under DDP) for a loader fed by the job, which
    orders the samples and deals them to the ranks itself: set_epoch() only checks the script's
    epoch against the loader's, and len() is this rank's samples in the pass that iterating the
    loader yields (known once connected)."""

    def __init__(self, loader: MinatoLoader) -> None:
        """loader: the loader whose passes this checks."""
        self._loader = loader
        self._warned: Optional[int] = None  # the offset last warned of

    def set_epoch(self, epoch: int) -> None:
        """Checks that `epoch` is the run's epoch the loader's next pass yields (loader.epoch,
        from 0); a one-line LoaderWarning when it is not, once for as long as the two stay as far
        apart (a script counting from 1 hears it once). The pass yields the loader's epoch
        whatever the sampler is told."""
        ahead = int(epoch) - self._loader.epoch
        if ahead == 0 or ahead == self._warned:
            return
        self._warned = ahead
        warnings.warn(
            f"rank {self._loader.rank}: sampler.set_epoch({epoch}), but the loader's next pass "
            f"is the run's epoch {self._loader.epoch} (epochs count from 0), which it yields "
            f"whatever the sampler is told; a resumed script gives the loader its saved "
            f"state_dict() to go on in the epoch it saved", LoaderWarning, stacklevel=2)

    def __len__(self) -> int:
        return self._loader._pass_samples(self._loader.epoch)


class MinatoLoader:
    """Iterates over this rank's batches from a minato-flink job, in place of a DataLoader.

    Each pass over the loader yields one epoch of the job's run (`epochs` passes in all), as a
    DataLoader does: the run's steps shared out over its epochs, len(loader) a pass, the same on
    every rank. Each batch is a Batch, a tuple of the collated fields that also says which samples
    it holds. Batches come as the job builds them, fast samples first, so a slow sample of one
    epoch may come in the next pass. A thread of the loader takes the batches from the job while
    the training step runs, as the pin-memory thread of PyTorch's DataLoader does: it copies each
    into tensors (pinned where CUDA is) and gives the job its credit for another. state_dict()
    says which samples the batches yielded so far held, and a loader given it with
    load_state_dict() gets exactly the rest, from the epoch it was in.

    A pass yields len(loader) batches, except where the job leaves samples out during the run (a
    file that goes bad under --on-bad-sample skip is quarantined for the rest of it): the run then
    ends that many samples early, and the pass it ends in yields fewer batches and says how many
    fewer in a LoaderWarning; the passes after it have a len() of 0."""

    def __init__(self, endpoint: Optional[str] = None, *, run_dir: Optional[str] = None,
                 rank: Optional[int] = None, batch_size: Optional[int] = None,
                 drop_last: bool = False, prefetch: int = 2, token: Optional[str] = None,
                 pin_memory: Optional[bool] = None, reconnect_s: float = 120.0,
                 connect_timeout_s: float = 120.0, job: Optional[Job] = None,
                 collate_fn: Optional[Callable[[List[Any]], Any]] = None) -> None:
        """Connects on the first batch, or on the first question only the job can answer
        (len(), epochs, batch_size).

        endpoint: "host:port" of this rank's device queue; or run_dir: the job's run directory,
        whose serving/rank-R.json names it (and names it anew after the job restarts).
        rank: this process's rank (default: torchrun's RANK, else 0). batch_size: the samples a
        batch holds, which the job decides (its --batch); given, a job of another batch size is
        refused in one line. drop_last: leave out the run's last batch when it holds fewer than
        batch_size samples, as DataLoader(drop_last=True) does (its samples count as consumed).
        prefetch: batches the job may send ahead; as many again wait ready in this process.
        token: the job's shared token, when it serves other hosts (default: MINATO_TOKEN).
        pin_memory: copy batches into pinned memory (default: when CUDA is there).
        reconnect_s: how long to wait for a job that went away (it restores in seconds), or for
        one that serves a loader resumed from a state, before giving up. connect_timeout_s: how
        long to wait for the job to serve at first. job: the job this loader stops when closed
        (launch() gives its EmbeddedJob). collate_fn: for a Python Dataset's batches, what makes
        one of its samples (default: torch's default_collate)."""
        if (endpoint is None) == (run_dir is None):
            raise ValueError("give either endpoint ('host:port') or run_dir")
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
        if not 1 <= prefetch <= 64:
            raise ValueError(f"prefetch must be 1-64, not {prefetch}")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        self.prefetch = prefetch
        self.drop_last = bool(drop_last)
        self._batch_size = batch_size
        self._endpoint, self._run_dir = endpoint, run_dir
        self._token = token if token is not None else os.environ.get("MINATO_TOKEN")
        self._pin = torch.cuda.is_available() if pin_memory is None else bool(pin_memory)
        self._reconnect_s, self._connect_timeout_s = reconnect_s, connect_timeout_s
        self._consumed = ConsumedSet()
        # The run a loaded state was saved from (see load_state_dict).
        self._saved_run: Optional[Dict[str, Any]] = None
        self._steps = 0
        self._epoch = 0  # the pass that iterating yields
        self._conn: Optional[_Connection] = None
        self._welcome: Optional[Dict[str, Any]] = None
        self._welcomed = threading.Event()
        self._ended = False
        self._started = False
        self._job = job  # an EmbeddedJob this loader stops when closed
        self._collate_fn = collate_fn  # a Python Dataset's batches: None is default_collate
        self._buffers = _Buffers(keep=2 * prefetch + 3)
        # The receiving thread and what it hands over: (connection, batch), _END or an error.
        # A batch of a connection that was lost since is not yielded: the job serves it again.
        self._receiver: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._ready: queue.Queue[_Item] = queue.Queue(maxsize=prefetch)
        self._lock = threading.Lock()  # the consumed samples against the connection they came on
        self._connection = 0
        self.dataset = ServedDataset(self)
        self.sampler = ServedSampler(self)

    # ---- DataLoader-like surface -------------------------------------------------------------

    def __iter__(self) -> Iterator[Batch]:
        """One epoch's batches, len(loader) of them (fewer, with a LoaderWarning, in the pass a
        run short of samples ends in): each pass over the loader is the next epoch of the job's
        run, as with a DataLoader. A pass left early goes on where it stopped."""
        self._started = True
        epoch = self._epoch
        start, end = self._pass_bounds(epoch)
        if start == end and (epoch >= self.epochs or self._ended):
            _LOG.warning("rank %d: the job's run of %d epochs has ended; epoch %d's pass is empty",
                         self.rank, self.epochs, epoch)
        while self._steps < end and not self._ended:
            batch = self._next_batch()
            if batch is None:
                self._log_jobs_messages()
                self._warn_short(epoch, start, end)
                break
            yield _identified(batch) if isinstance(batch, SampleBatch) else batch
        else:
            if self._steps >= self.run_steps and not self._ended:
                self._await_end()
            self._log_jobs_messages()
        if self._epoch < self.epochs:
            self._epoch += 1

    def __len__(self) -> int:
        """Steps of this rank in the epoch that iterating yields (known once connected): the
        run's steps shared out over its epochs, so every rank has as many in each; 0 for the
        passes after the run has ended."""
        start, end = self._pass_bounds(self._epoch)
        return end - start

    @property
    def batch_size(self) -> int:
        """Samples a batch holds: the job's --batch (known once connected). Every batch holds as
        many but the run's last, which drop_last leaves out."""
        return int(self._welcome_now()["batch"])

    @property
    def epochs(self) -> int:
        """Epochs of the job's run: the passes over this loader that yield batches."""
        return int(self._welcome_now().get("epochs", 1))

    @property
    def epoch(self) -> int:
        """The epoch (from 0) that the next pass over the loader yields, or is yielding."""
        return self._epoch

    @property
    def run_steps(self) -> int:
        """Steps of this rank in the whole run, as planned: its samples in batches of
        batch_size, the last one short unless drop_last leaves it out."""
        w = self._welcome_now()
        samples, batch = int(w["samples"]), int(w["batch"])
        return samples // batch if self.drop_last else -(-samples // batch)

    def _pass_bounds(self, epoch: int) -> Tuple[int, int]:
        """The steps [start, end) of `epoch`'s pass: epoch k ends at step ceil((k+1) T / E) of
        the run's T. Passes differ by one step at most, and the first ones take the extra steps:
        epochs x len(loader) asked before the first pass is never less than the run's steps, so a
        schedule sized by it (OneCycleLR's total_steps) is not stepped past its end. Once the run
        has ended, no pass goes beyond the steps it had."""
        epochs, steps = self.epochs, self.run_steps
        if epoch >= epochs:
            start, end = steps, steps
        else:
            start, end = -(-epoch * steps // epochs), -(-(epoch + 1) * steps // epochs)
        if self._ended:
            start, end = min(start, self._steps), min(end, self._steps)
        return start, end

    def _pass_samples(self, epoch: int) -> int:
        """This rank's samples in `epoch`'s pass: its steps' batches, the run's last one short."""
        start, end = self._pass_bounds(epoch)
        batch = self.batch_size
        if self.drop_last:
            return (end - start) * batch
        samples = int(self._welcome_now()["samples"])
        return min(end * batch, samples) - min(start * batch, samples)

    def _epoch_samples(self) -> int:
        """The samples of one epoch of the run over all ranks, from what the job says: the
        ranks' samples are E x N less the run's last E x N mod ranks, which no rank is served."""
        w = self._welcome_now()
        if "epoch_samples" in w:
            return int(w["epoch_samples"])
        epochs, ranks = int(w.get("epochs", 1)), int(w.get("ranks", 1))
        served = int(w["samples"]) * ranks
        # E x N is the one multiple of E in [served, served + ranks - 1], if only one is there.
        low, high = -(-served // epochs), (served + ranks - 1) // epochs
        if low != high:
            raise LoaderError(
                f"rank {self.rank}: the job does not say how many samples an epoch has, and "
                f"{served} served over {epochs} epochs to {ranks} ranks leave it {low} to {high}")
        return low

    def _log_jobs_messages(self) -> None:
        """An embedded job's messages on a pass (a sample it quarantined, say) are logged before
        the pass ends: the job writes them before it serves the batches they bear on."""
        if self._job is not None:
            self._job.log_now()

    def _warn_short(self, epoch: int, start: int, end: int) -> None:
        """The run ended inside `epoch`'s pass: says how many batches fewer it yielded, and why."""
        w = self._welcome_now()
        with self._lock:
            lacking = int(w["samples"]) - len(self._consumed)
        warnings.warn(
            f"rank {self.rank}: epoch {epoch}'s pass yielded {self._steps - start} of its "
            f"{end - start} batches (len(loader)): the job left {lacking} of this rank's "
            f"{w['samples']} samples out of the run, those of inputs it quarantined during the "
            f"run (--on-bad-sample skip; its report lists them)", LoaderWarning, stacklevel=3)

    def _welcome_now(self) -> Dict[str, Any]:
        return self._welcome or self._connection_welcome()

    def _await_end(self) -> None:
        """After the run's last step the job's end follows: taken, so that it is known to have
        finished (its report is written) when the loader closes."""
        if self._next_batch() is not None:
            raise LoaderError(f"rank {self.rank}: the job served more than its run's "
                              f"{self.run_steps} steps")

    def state_dict(self) -> Dict[str, Any]:
        """What to save with the model: the samples of every batch yielded so far (and of a last
        batch drop_last left out), the epoch being yielded, and which run they are of."""
        with self._lock:
            return {"version": _STATE_VERSION, "rank": self.rank, "steps": self._steps,
                    "epoch": self._epoch, "consumed": self._consumed.to_wire(),
                    "run": _run.identity(self._run_dir, self._welcome)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes from a state_dict(): the job serves exactly the samples it does not name.

        state: what state_dict() returned, as saved with the model (before the first batch)."""
        if self._started or self._conn is not None:
            raise LoaderError("load_state_dict() goes before the first batch")
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise LoaderError(f"not a minato-flink loader state (version {_STATE_VERSION})")
        if state.get("rank") != self.rank:
            raise LoaderError(f"the state is rank {state.get('rank')}'s; this loader is rank {self.rank}")
        try:
            consumed = ConsumedSet.from_wire(state["consumed"])
            steps, epoch = int(state.get("steps", 0)), int(state.get("epoch", 0))
        except (KeyError, ValueError, TypeError) as err:
            raise LoaderError(f"bad loader state: {err}") from None
        if steps < 0 or epoch < 0:
            raise LoaderError(f"bad loader state: step {steps}, epoch {epoch}")
        saved_run = state.get("run")
        if saved_run is not None and not isinstance(saved_run, dict):
            raise LoaderError(f"bad loader state: run {saved_run!r}")
        # Checked here where the run directory already names its run, else before the job is
        # told what the state consumed, and against the job's welcome.
        mismatch = _run.other_run(saved_run, self._run_dir)
        if mismatch is not None:
            raise LoaderError(mismatch)
        self._consumed, self._steps, self._epoch = consumed, steps, epoch
        self._saved_run = saved_run

    def close(self) -> None:
        """Stops taking batches and, for a loader launch() made, stops the job (after its end it
        is let finish its report)."""
        self.close_connection()
        if self._job is not None:
            # After the run's end the job writes its report and exits; otherwise stop it now.
            self._job.close(finish_s=120 if self._ended else 0)
            self._job = None

    def __enter__(self) -> MinatoLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the protocol ------------------------------------------------------------------------

    def _connection_welcome(self) -> Dict[str, Any]:
        if self._receiver is not None:  # it connects: wait for it, or for what it hands over
            while not self._welcomed.wait(0.2):
                if not self._receiver.is_alive():
                    self._next_batch()  # raises the error that stopped it
        elif self._conn is None:
            self._connect(self._patience())
        assert self._welcome is not None  # set with the connection
        return self._welcome

    def _patience(self) -> float:
        """connect_timeout_s for the first connection, reconnect_s for a job that serves again."""
        return self._reconnect_s if self._welcome or self._steps else self._connect_timeout_s

    def _where(self) -> Tuple[str, int]:
        if self._endpoint is not None:
            host, _, port = self._endpoint.rpartition(":")
            return host or "localhost", int(port)
        assert self._run_dir is not None  # one of the two, checked at construction
        path = os.path.join(self._run_dir, "serving", f"rank-{self.rank}.json")
        try:
            with open(path) as f:
                e = json.load(f)
            return str(e["host"]), int(e["port"])
        except FileNotFoundError:
            raise ConnectionError(f"{path} does not exist yet") from None
        except (ValueError, KeyError) as err:
            raise ConnectionError(f"{path}: {err}") from None

    def _connect(self, patience_s: float, stop: Optional[threading.Event] = None) -> None:
        """Connects, retrying for up to patience_s; gives up quietly once `stop` is set."""
        deadline = time.monotonic() + patience_s
        last: Optional[BaseException] = None
        while stop is None or not stop.is_set():
            if self._job is not None:
                self._job.check()
            try:
                host, port = self._where()
                self._handshake(host, port, stop)
                return
            except (ConnectionError, OSError) as err:
                last = err
            if time.monotonic() > deadline:
                where = self._endpoint or self._run_dir
                raise LoaderError(f"rank {self.rank}: cannot reach the job at {where}: {last}")
            time.sleep(0.2)

    def _handshake(self, host: str, port: int, stop: Optional[threading.Event] = None) -> None:
        """hello (who this is, its token), answered `ready` once the job has checked it; then the
        samples consumed, which may be large, answered `welcome`. Both are made before connecting:
        the job closes a connection whose hello has not come within 2 s."""
        mismatch = _run.other_run(self._saved_run, self._run_dir)
        if mismatch is not None:
            raise LoaderError(mismatch)
        with self._lock:
            consumed = self._consumed.to_wire()
        hello: Dict[str, Any] = {"type": "hello", "version": PROTOCOL_VERSION,
                                 "rank": self.rank, "prefetch": self.prefetch}
        if self._token is not None:
            hello["token"] = self._token
        probe = None
        try:
            if os.path.isdir(_SHM):
                nonce = secrets.token_hex(16)
                probe = os.path.join(_SHM, f"minato-probe-{nonce[:12]}")
                with open(probe, "w") as f:
                    f.write(nonce)
                hello["shm_probe"] = {"path": probe, "nonce": nonce}
            conn = _Connection(host, port, timeout=10)
            try:
                conn.send(hello)
                self._expect(conn.receive(), "ready")
                conn.send({"type": "consumed", "consumed": consumed})
                w = self._expect(conn.receive(), "welcome")
                if self._batch_size is not None and w.get("batch") != self._batch_size:
                    raise LoaderError(f"rank {self.rank}: the job's batches hold {w.get('batch')} "
                                      f"samples, not the loader's batch_size of {self._batch_size}")
                mismatch = _run.other_shape(self._saved_run, w, self._epoch, self._steps)
                if mismatch is not None:
                    raise LoaderError(f"rank {self.rank}: {mismatch}")
            except BaseException:
                conn.close()
                raise
        finally:
            if probe is not None:
                os.unlink(probe)
        conn.send({"type": "credit", "n": self.prefetch})
        with self._lock:  # against close_connection(), which sets `stop` first
            if stop is not None and stop.is_set():
                conn.close()
                return
            self._conn, self._welcome = conn, w
        self._welcomed.set()

    def _expect(self, message: Dict[str, Any], kind: str) -> Dict[str, Any]:
        """`message` if it is of `kind`; the job's refusal, or anything else, as one line."""
        if message.get("type") == "refused":
            raise LoaderError(f"rank {self.rank}: the job refused this process: "
                              f"{message.get('reason')}")
        if message.get("type") != kind:
            raise LoaderError(f"rank {self.rank}: expected {kind!r}, got {message.get('type')!r}")
        return message

    def _next_batch(self) -> Optional[Batch]:
        """The next batch the receiving thread has ready (None at the run's end), once its
        samples count as consumed; raises what stopped the thread."""
        if self._receiver is None:
            self._start_receiver()
        while True:
            try:
                item = self._ready.get(timeout=0.5)
            except queue.Empty:
                if self._receiver is None or self._receiver.is_alive():
                    continue
                # It handed over its last word before it ended, unless close_connection() ran.
                raise LoaderError(f"rank {self.rank}: the loader's connection was closed")
            if isinstance(item, _End):
                self._ended = True
                self.close_connection()
                return None
            if isinstance(item, BaseException):
                self.close_connection()
                raise item
            connection, batch = item
            with self._lock:
                if connection != self._connection:
                    continue  # taken before the job went away: it serves the batch again
                for epoch, index in batch.samples.tolist():
                    self._consumed.add(epoch, index)
                assert self._welcome is not None  # a batch comes after the welcome
                if self.drop_last and len(batch.samples) < int(self._welcome["batch"]):
                    # The run's last batch, short: consumed, so that no job serves it again, but
                    # not a step, as DataLoader(drop_last=True) leaves its last batch out.
                    continue
                self._steps += 1
            return batch

    def _start_receiver(self) -> None:
        device = torch.cuda.current_device() if self._pin and torch.cuda.is_available() else None
        self._stop = threading.Event()
        self._receiver = threading.Thread(target=self._receive, args=(self._stop, device),
                                          name=f"minato-loader-rank-{self.rank}", daemon=True)
        self._receiver.start()

    def _receive(self, stop: threading.Event, device: Optional[int]) -> None:
        """The receiving thread: takes each batch off the connection, copies it into tensors,
        credits the job with another and hands the batch over, until the run's end or close."""
        if device is not None:
            torch.cuda.set_device(device)  # pinned memory on this process's device's context
        try:
            while not stop.is_set():
                if self._conn is None:
                    self._connect(self._patience(), stop)
                    if stop.is_set():
                        return
                connection = self._connection
                conn = self._conn
                assert conn is not None  # connected, or stop is set
                try:
                    m = conn.receive()
                    if m["type"] == "end":
                        conn.send({"type": "done"})
                        self._hand_over(_END, stop)
                        return
                    if m["type"] != "batch":
                        raise LoaderError(f"rank {self.rank}: unexpected message {m['type']!r}")
                    batch = self._take(conn, m)
                    conn.send({"type": "credit", "n": 1})
                except (ConnectionError, OSError) as err:
                    if stop.is_set():
                        return
                    # The job went away (a failure it restores from, or it stopped): whatever it
                    # sent and this process did not yield comes again after reconnecting.
                    _LOG.warning("rank %d: lost the job (%s); reconnecting for up to %.0f s",
                                 self.rank, err, self._reconnect_s)
                    with self._lock:
                        self._connection += 1
                        if self._conn is not None:
                            self._conn.close()
                            self._conn = None
                    continue
                self._hand_over((connection, batch), stop)
        except BaseException as err:  # the main thread raises it at its next batch
            self._hand_over(err, stop)

    def _hand_over(self, item: _Item, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self._ready.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def close_connection(self) -> None:
        """Stops taking batches: the thread ends, and what it had ready is not yielded."""
        receiver, self._receiver = self._receiver, None
        self._stop.set()
        with self._lock:
            self._connection += 1
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        if receiver is not None and receiver is not threading.current_thread():
            receiver.join(30)
        while True:
            try:
                self._ready.get_nowait()
            except queue.Empty:
                break

    def _take(self, conn: _Connection, m: Dict[str, Any]) -> Batch:
        assert self._welcome is not None  # a batch comes after the welcome
        if "python" in m:
            return python_samples.take(m, self._collate_fn, self.rank)  # type: ignore[return-value]
        try:
            img, lab = m["image"], m["label"]
            img_t, lab_t = _DTYPES[img["dtype"]], _DTYPES[lab["dtype"]]
            nbytes = int(m["nbytes"])
            n_img = _numel(img["shape"]) * _SIZES[img["dtype"]]
            n_lab = _numel(lab["shape"]) * _SIZES[lab["dtype"]]
            ids = [(int(s[0]), int(s[1]), str(s[2]), str(s[3])) for s in m["samples"]]
            step = int(m["step"])
            slot = self._welcome["slots"][int(m["slot"])] if "slot" in m else None
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise LoaderError(
                f"rank {self.rank}: a batch message this loader cannot read"
                f" ({type(err).__name__}: {err}); is the job of another version?") from None
        if n_img + n_lab != nbytes or nbytes < 0:
            raise LoaderError(f"rank {self.rank}: a batch of {nbytes} bytes whose image and label "
                              f"take {n_img} + {n_lab}: not a minato-flink job's")
        if self._pin:
            # PyTorch's caching host allocator hands pinned blocks out again: no fresh pages.
            whole = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        else:
            whole = torch.frombuffer(self._buffers.take(nbytes), dtype=torch.uint8, count=nbytes)
        if slot is not None:
            # One memcpy on this thread, outside the GIL: NumPy's copy. torch's copy_ splits a
            # large copy over its intra-op threads, whose OpenMP workers then spin beside the job
            # and the training loop (2 s of 9 on 2 cores with torch.set_num_threads(2)).
            src = conn.slot(slot, nbytes)
            np.copyto(whole.numpy(), np.frombuffer(src, dtype=np.uint8, count=nbytes))
        else:
            conn.read_into(whole.numpy())
        image = whole[:n_img].view(img_t).view(img["shape"])
        label = whole[n_img:].view(lab_t).view(lab["shape"])
        if lab_t == torch.int32:
            label = label.long()
        samples = torch.tensor([[s[0], s[1]] for s in ids], dtype=torch.int64).view(-1, 2)
        return Batch((image, label), samples=samples, cases=[s[2] for s in ids],
                     paths=[s[3] for s in ids], step=step)


_Item = Union[Tuple[int, Batch], _End, BaseException]


def _numel(shape: List[int]) -> int:
    n = 1
    for d in shape:
        if not isinstance(d, int) or d < 0:
            raise ValueError(f"shape {shape}")
        n *= d
    return n


class _Buffers:
    """Host memory for batches, used again once no tensor refers to it any more.

    A batch's tensors are views of one bytearray (torch.frombuffer holds a reference to it for as
    long as any of them, or any view of them, lives), so a bytearray that only this pool refers
    to is free. Fresh memory costs a page fault every 4 KiB: 10 MiB into a fresh tensor took
    12 ms of CPU where the copy alone takes about 1 (docs/pytorch.md)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._all: List[bytearray] = []

    def take(self, nbytes: int) -> bytearray:
        for i in range(len(self._all)):
            # Two references: the list's and getrefcount's argument.
            if len(self._all[i]) >= nbytes and sys.getrefcount(self._all[i]) == 2:
                return self._all[i]
        buf = bytearray(nbytes)
        if len(self._all) < self._keep:
            self._all.append(buf)
        else:  # the process holds many batches: let this one go with its tensors
            for i in range(len(self._all)):
                if sys.getrefcount(self._all[i]) == 2:
                    self._all[i] = buf
                    break
        return buf
