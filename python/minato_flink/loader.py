"""The training process's side of a minato-flink serving job: a DataLoader-like iterator."""

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

import numpy as np
import torch

from . import samples as python_samples
from .consumed import ConsumedSet
from .samples import SampleBatch

_LOG = logging.getLogger("minato_flink")

PROTOCOL_VERSION = 1
_SHM = "/dev/shm"
_DTYPES = {"float32": torch.float32, "uint8": torch.uint8, "int32": torch.int32}
_SIZES = {"float32": 4, "uint8": 1, "int32": 4}


_END = object()  # the run's end, as the receiving thread hands it over


class LoaderError(RuntimeError):
    """The job refused this process, broke the protocol, or could not be reached: one line."""


class Batch:
    """One training step's samples.

    image: float32, (B, 1, D, H, W) for volumes, (B, C, H, W) for images.
    label: uint8 of the image's shape for volumes; int64 (B,) classes for images.
    samples: int64 (B, 2), each sample's (epoch, index). cases, paths: the source of each sample
    and whether it took the fast or the slow path. step: this rank's step, from 0.
    """

    __slots__ = ("image", "label", "samples", "cases", "paths", "step")

    def __init__(self, image, label, samples, cases, paths, step):
        self.image, self.label, self.samples = image, label, samples
        self.cases, self.paths, self.step = cases, paths, step

    def __len__(self):
        return self.image.shape[0]

    def to(self, device, non_blocking=True):
        """(image, label) on `device`; from pinned memory the copies do not block the host."""
        return (self.image.to(device, non_blocking=non_blocking),
                self.label.to(device, non_blocking=non_blocking))


class _Connection:
    def __init__(self, host, port, timeout):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)
        self.maps = {}

    def send(self, header):
        body = json.dumps(header, separators=(",", ":")).encode()
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def _exactly(self, n, into=None):
        view = memoryview(into).cast("B") if into is not None else memoryview(bytearray(n))
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionError("the job closed the connection")
            got += k
        return view

    def receive(self):
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

    def read_into(self, array):
        self._exactly(array.nbytes, array)

    def slot(self, path, nbytes):
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

    def close(self):
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
            m.close()
        self.maps.clear()


class MinatoLoader:
    """Iterates over this rank's batches from a minato-flink job, in place of a DataLoader.

    endpoint: "host:port" of this rank's device queue, or run_dir: the job's run directory, whose
    serving/rank-R.json names it (and names it anew after the job restarts).
    rank: this process's rank (default: torchrun's RANK, else 0). prefetch: batches the job may
    send ahead; as many again wait ready in this process. token: the job's shared token, when it
    serves other hosts (default: MINATO_TOKEN). pin_memory: copy batches into pinned memory
    (default: when CUDA is there). connect_timeout_s: how long to wait for the job to serve at
    first. reconnect_s: how long to wait for a job that went away (it restores in seconds), or for
    one that serves a loader resumed from a state, before giving up.

    Each pass over the loader yields one epoch of the job's run (`epochs` passes in all), as a
    DataLoader does: the run's steps shared out over its epochs, len(loader) a pass, the same on
    every rank. Batches come as the job builds them, fast samples first, so a slow sample of one
    epoch may come in the next pass. A thread of the loader takes the batches from the job while
    the training step runs, as the pin-memory thread of PyTorch's DataLoader does: it copies each
    into tensors (pinned where CUDA is) and gives the job its credit for another. state_dict()
    says which samples the batches yielded so far held, and a loader given it with
    load_state_dict() gets exactly the rest, from the epoch it was in."""

    def __init__(self, endpoint=None, *, run_dir=None, rank=None, prefetch=2, token=None,
                 pin_memory=None, reconnect_s=120.0, connect_timeout_s=120.0, job=None,
                 collate_fn=None):
        if (endpoint is None) == (run_dir is None):
            raise ValueError("give either endpoint ('host:port') or run_dir")
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
        if not 1 <= prefetch <= 64:
            raise ValueError(f"prefetch must be 1-64, not {prefetch}")
        self.prefetch = prefetch
        self._endpoint, self._run_dir = endpoint, run_dir
        self._token = token if token is not None else os.environ.get("MINATO_TOKEN")
        self._pin = torch.cuda.is_available() if pin_memory is None else bool(pin_memory)
        self._reconnect_s, self._connect_timeout_s = reconnect_s, connect_timeout_s
        self._consumed = ConsumedSet()
        self._steps = 0
        self._epoch = 0  # the pass that iterating yields
        self._conn = None
        self._welcome = None
        self._welcomed = threading.Event()
        self._ended = False
        self._started = False
        self._job = job  # an EmbeddedJob this loader stops when closed
        self._collate_fn = collate_fn  # a Python Dataset's batches: None is default_collate
        self._buffers = _Buffers(keep=2 * prefetch + 3)
        # The receiving thread and what it hands over: (connection, batch), _END or an error.
        # A batch of a connection that was lost since is not yielded: the job serves it again.
        self._receiver = None
        self._stop = threading.Event()
        self._ready = queue.Queue(maxsize=prefetch)
        self._lock = threading.Lock()  # the consumed samples against the connection they came on
        self._connection = 0

    # ---- DataLoader-like surface -------------------------------------------------------------

    def __iter__(self):
        """One epoch's batches, len(loader) of them: each pass over the loader is the next epoch
        of the job's run, as with a DataLoader. A pass left early goes on where it stopped."""
        self._started = True
        _, end = self._pass_bounds(self._epoch)
        if self._epoch >= self.epochs:
            _LOG.warning("rank %d: the job's run has %d epochs, all yielded; epoch %d is empty",
                         self.rank, self.epochs, self._epoch)
        while self._steps < end and not self._ended:
            batch = self._next_batch()
            if batch is None:
                break
            yield batch.collated if isinstance(batch, SampleBatch) else batch
        else:
            if self._steps >= self.run_steps and not self._ended:
                self._await_end()
        if self._epoch < self.epochs:
            self._epoch += 1

    def __len__(self):
        """Steps of this rank in the epoch that iterating yields (known once connected): the
        run's steps shared out over its epochs, so every rank has as many in each."""
        start, end = self._pass_bounds(self._epoch)
        return end - start

    @property
    def epochs(self):
        """Epochs of the job's run: the passes over this loader that yield batches."""
        return int(self._welcome_now().get("epochs", 1))

    @property
    def epoch(self):
        """The epoch (from 0) that the next pass over the loader yields, or is yielding."""
        return self._epoch

    @property
    def run_steps(self):
        """Steps of this rank in the whole run."""
        w = self._welcome_now()
        return -(-w["samples"] // w["batch"])

    def _pass_bounds(self, epoch):
        """The steps [start, end) of `epoch`'s pass: epoch k ends at step ceil((k+1) T / E) of
        the run's T. Passes differ by one step at most, and the first ones take the extra steps:
        epochs x len(loader) asked before the first pass is never less than the run's steps, so a
        schedule sized by it (OneCycleLR's total_steps) is not stepped past its end."""
        epochs, steps = self.epochs, self.run_steps
        if epoch >= epochs:
            return steps, steps
        return -(-epoch * steps // epochs), -(-(epoch + 1) * steps // epochs)

    def _welcome_now(self):
        return self._welcome or self._connection_welcome()

    def _await_end(self):
        """After the run's last step the job's end follows: taken, so that it is known to have
        finished (its report is written) when the loader closes."""
        if self._next_batch() is not None:
            raise LoaderError(f"rank {self.rank}: the job served more than its run's "
                              f"{self.run_steps} steps")

    def state_dict(self):
        """What to save with the model: the samples of every batch yielded so far, and the
        epoch being yielded."""
        with self._lock:
            return {"version": PROTOCOL_VERSION, "rank": self.rank, "steps": self._steps,
                    "epoch": self._epoch, "consumed": self._consumed.to_wire()}

    def load_state_dict(self, state):
        """Resumes from a state_dict(): the job serves exactly the samples it does not name."""
        if self._started or self._conn is not None:
            raise LoaderError("load_state_dict() goes before the first batch")
        if not isinstance(state, dict) or state.get("version") != PROTOCOL_VERSION:
            raise LoaderError(f"not a minato-flink loader state (version {PROTOCOL_VERSION})")
        if state.get("rank") != self.rank:
            raise LoaderError(f"the state is rank {state.get('rank')}'s; this loader is rank {self.rank}")
        try:
            consumed = ConsumedSet.from_wire(state["consumed"])
            steps, epoch = int(state.get("steps", 0)), int(state.get("epoch", 0))
        except (KeyError, ValueError, TypeError) as err:
            raise LoaderError(f"bad loader state: {err}") from None
        if steps < 0 or epoch < 0:
            raise LoaderError(f"bad loader state: step {steps}, epoch {epoch}")
        self._consumed, self._steps, self._epoch = consumed, steps, epoch

    def close(self):
        self.close_connection()
        if self._job is not None:
            # After the run's end the job writes its report and exits; otherwise stop it now.
            self._job.close(finish_s=120 if self._ended else 0)
            self._job = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the protocol ------------------------------------------------------------------------

    def _connection_welcome(self):
        if self._receiver is not None:  # it connects: wait for it, or for what it hands over
            while not self._welcomed.wait(0.2):
                if not self._receiver.is_alive():
                    self._next_batch()  # raises the error that stopped it
            return self._welcome
        if self._conn is None:
            self._connect(self._patience())
        return self._welcome

    def _patience(self):
        """connect_timeout_s for the first connection, reconnect_s for a job that serves again."""
        return self._reconnect_s if self._welcome or self._steps else self._connect_timeout_s

    def _where(self):
        if self._endpoint is not None:
            host, _, port = self._endpoint.rpartition(":")
            return host or "localhost", int(port)
        path = os.path.join(self._run_dir, "serving", f"rank-{self.rank}.json")
        try:
            with open(path) as f:
                e = json.load(f)
            return e["host"], int(e["port"])
        except FileNotFoundError:
            raise ConnectionError(f"{path} does not exist yet") from None
        except (ValueError, KeyError) as err:
            raise ConnectionError(f"{path}: {err}") from None

    def _connect(self, patience_s, stop=None):
        """Connects, retrying for up to patience_s; gives up quietly once `stop` is set."""
        deadline = time.monotonic() + patience_s
        last = None
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

    def _handshake(self, host, port, stop=None):
        conn = _Connection(host, port, timeout=10)
        probe = None
        try:
            with self._lock:
                consumed = self._consumed.to_wire()
            hello = {"type": "hello", "version": PROTOCOL_VERSION, "rank": self.rank,
                     "prefetch": self.prefetch, "consumed": consumed}
            if self._token is not None:
                hello["token"] = self._token
            if os.path.isdir(_SHM):
                nonce = secrets.token_hex(16)
                probe = os.path.join(_SHM, f"minato-probe-{nonce[:12]}")
                with open(probe, "w") as f:
                    f.write(nonce)
                hello["shm_probe"] = {"path": probe, "nonce": nonce}
            conn.send(hello)
            w = conn.receive()
        except BaseException:
            conn.close()
            raise
        finally:
            if probe is not None:
                os.unlink(probe)
        if w.get("type") == "refused":
            conn.close()
            raise LoaderError(f"rank {self.rank}: the job refused this process: {w.get('reason')}")
        if w.get("type") != "welcome":
            conn.close()
            raise LoaderError(f"rank {self.rank}: expected a welcome, got {w.get('type')!r}")
        conn.send({"type": "credit", "n": self.prefetch})
        with self._lock:  # against close_connection(), which sets `stop` first
            if stop is not None and stop.is_set():
                conn.close()
                return
            self._conn, self._welcome = conn, w
        self._welcomed.set()

    def _next_batch(self):
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
            if item is _END:
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
                self._steps += 1
            return batch

    def _start_receiver(self):
        device = torch.cuda.current_device() if self._pin and torch.cuda.is_available() else None
        self._stop = threading.Event()
        self._receiver = threading.Thread(target=self._receive, args=(self._stop, device),
                                          name=f"minato-loader-rank-{self.rank}", daemon=True)
        self._receiver.start()

    def _receive(self, stop, device):
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
                try:
                    m = self._conn.receive()
                    if m["type"] == "end":
                        self._conn.send({"type": "done"})
                        self._hand_over(_END, stop)
                        return
                    if m["type"] != "batch":
                        raise LoaderError(f"rank {self.rank}: unexpected message {m['type']!r}")
                    batch = self._take(m)
                    self._conn.send({"type": "credit", "n": 1})
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

    def _hand_over(self, item, stop):
        while not stop.is_set():
            try:
                self._ready.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def close_connection(self):
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

    def _take(self, m):
        if "python" in m:
            return python_samples.take(m, self._collate_fn, self.rank)
        try:
            img, lab = m["image"], m["label"]
            img_t, lab_t = _DTYPES[img["dtype"]], _DTYPES[lab["dtype"]]
            nbytes = int(m["nbytes"])
            n_img = _numel(img["shape"]) * _SIZES[img["dtype"]]
            n_lab = _numel(lab["shape"]) * _SIZES[lab["dtype"]]
            ids = [(int(s[0]), int(s[1]), s[2], s[3]) for s in m["samples"]]
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
            src = self._conn.slot(slot, nbytes)
            np.copyto(whole.numpy(), np.frombuffer(src, dtype=np.uint8, count=nbytes))
        else:
            self._conn.read_into(whole.numpy())
        image = whole[:n_img].view(img_t).view(img["shape"])
        label = whole[n_img:].view(lab_t).view(lab["shape"])
        if lab_t == torch.int32:
            label = label.long()
        samples = torch.tensor([[s[0], s[1]] for s in ids], dtype=torch.int64).view(-1, 2)
        return Batch(image, label, samples, [s[2] for s in ids], [s[3] for s in ids], step)


def _numel(shape):
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

    def __init__(self, keep):
        self._keep = keep
        self._all = []

    def take(self, nbytes):
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
