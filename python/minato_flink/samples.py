"""A Python Dataset's samples between the job's Python workers and the training process.

A worker writes what `dataset[index]` returned into one file in shared memory: every array
(tensor or NumPy) one after another, 64-byte aligned, and a layout, a small JSON tree that says
how they nest (tuple, list, dict) and carries numbers, strings and None as they are. The job
carries the file's name and the layout; the training process maps the file, rebuilds the
structure over the mapping and collates the batch's samples from there (`default_collate` or the
script's `collate_fn`), then deletes the file.
"""

from __future__ import annotations

import json
import mmap
import os
import random
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

try:
    import torch
except ImportError:  # a worker for a NumPy-only Dataset needs no torch
    torch = None  # type: ignore[assignment]

_ALIGN = 64
_MASK64 = (1 << 64) - 1


def sample_seed(seed: int, epoch: int, index: int) -> int:
    """The 64-bit seed of sample (seed, epoch, index): NumPy's SeedSequence of the three."""
    words = np.random.SeedSequence([seed & _MASK64, epoch, index]).generate_state(2, np.uint32)
    return int(words[0]) | int(words[1]) << 32


def seed_generators(seed: int, epoch: int, index: int) -> None:
    """Seeds Python's `random`, NumPy's global generator and torch's from the sample's identity,
    so that what `__getitem__` draws from them is a function of (seed, epoch, index)."""
    s = sample_seed(seed, epoch, index)
    random.seed(s)
    np.random.seed([s & 0xFFFFFFFF, s >> 32])
    if torch is not None:
        torch.manual_seed(s)


def one_thread() -> None:
    """Sets torch to one thread in this process, as DataLoader's workers do: W workers of
    `cores` threads each would oversubscribe the host's cores."""
    if torch is not None:
        torch.set_num_threads(1)


class UnsupportedSample(TypeError):
    """What `__getitem__` returned holds a value the job cannot carry."""


def _contiguous(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """`a` in C order (np.ascontiguousarray would make a 0-d array 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _array_of(value: Any) -> Optional[Tuple[str, np.ndarray[Any, Any]]]:
    if torch is not None and isinstance(value, torch.Tensor):
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: carried as its raw 16 bits
            return "tensor:bfloat16", _contiguous(t.view(torch.int16).numpy())
        return "tensor", _contiguous(t.numpy())
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise UnsupportedSample(f"a NumPy array of dtype {value.dtype}")
        return "ndarray", _contiguous(value)
    return None


def encode(value: Any) -> Tuple[Dict[str, Any], List[np.ndarray[Any, Any]]]:
    """The layout of `value` and its arrays in the order the layout's offsets count them."""
    arrays: List[np.ndarray[Any, Any]] = []
    offset = [0]

    def walk(v: Any) -> Dict[str, Any]:
        found = _array_of(v)
        if found is not None:
            kind, a = found
            at = 0
            if a.nbytes:  # an empty array takes no room in the file
                at = -(-offset[0] // _ALIGN) * _ALIGN
                arrays.append(a)
                offset[0] = at + a.nbytes
            node = {"t": kind, "dtype": a.dtype.str, "shape": list(a.shape), "offset": at}
            if kind == "tensor:bfloat16":
                node["t"], node["bf16"] = "tensor", True
            return node
        if v is None or isinstance(v, (bool, str)):
            return {"t": "value", "v": v}
        if isinstance(v, (int, np.integer)):
            return {"t": "int", "v": int(v)}
        if isinstance(v, (float, np.floating)):
            return {"t": "float", "v": float(v)}
        if isinstance(v, tuple):
            return {"t": "tuple", "v": [walk(x) for x in v]}
        if isinstance(v, list):
            return {"t": "list", "v": [walk(x) for x in v]}
        if isinstance(v, dict):
            keys = list(v)
            if not all(isinstance(k, str) for k in keys):
                raise UnsupportedSample("a dict whose keys are not all strings")
            return {"t": "dict", "k": keys, "v": [walk(v[k]) for k in keys]}
        raise UnsupportedSample(f"a value of type {type(v).__name__}")

    layout = walk(value)
    layout["nbytes"] = offset[0]
    return layout, arrays


def write(path: str, value: Any) -> Tuple[int, str]:
    """Writes `value`'s arrays into a new file `path`; returns its bytes and the layout (JSON)."""
    layout, arrays = encode(value)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        at = 0
        with os.fdopen(fd, "wb", closefd=False) as f:
            for a in arrays:
                pad = -at % _ALIGN
                if pad:
                    f.write(b"\0" * pad)
                    at += pad
                f.write(a.data.cast("B"))  # C order: _contiguous
                at += a.nbytes
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    return layout["nbytes"], json.dumps(layout, separators=(",", ":"))


def _map(path: str, nbytes: int) -> Optional[mmap.mmap]:
    if nbytes == 0:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        # Private and writable: torch takes the arrays without a copy or a read-only warning,
        # and a collate_fn that writes into a sample changes this process's copy only.
        return mmap.mmap(fd, nbytes, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


def decode(layout: Dict[str, Any], buffer: Optional[mmap.mmap]) -> Any:
    """The sample `layout` describes, its arrays views of `buffer` (read-only)."""

    def walk(n: Dict[str, Any]) -> Any:
        t = n["t"]
        if t in ("tensor", "ndarray"):
            shape = n["shape"]
            count = int(np.prod(shape, dtype=np.int64))
            dtype = np.dtype(n["dtype"])
            if count:
                assert buffer is not None  # a sample with values has a file of them
                a = np.frombuffer(buffer, dtype=dtype, count=count, offset=n["offset"])
            else:
                a = np.empty(0, dtype=dtype)
            a = a.reshape(shape)
            if t == "ndarray":
                return a
            if torch is None:
                raise RuntimeError("the sample holds a torch tensor and torch does not import")
            tensor = torch.from_numpy(a)
            return tensor.view(torch.bfloat16) if n.get("bf16") else tensor
        if t in ("value", "int", "float"):
            return n["v"]
        if t == "tuple":
            return tuple(walk(x) for x in n["v"])
        if t == "list":
            return [walk(x) for x in n["v"]]
        if t == "dict":
            return {k: walk(x) for k, x in zip(n["k"], n["v"])}
        raise ValueError(f"a sample layout of unknown kind {t!r}")

    return walk(layout)


def load(path: str, nbytes: int, layout_json: str) -> Any:
    """The sample in file `path`, its arrays views of the file mapped (unmapped with them)."""
    return decode(json.loads(layout_json), _map(path, nbytes))


def collate(entries: Sequence[Sequence[Any]],
            collate_fn: Optional[Callable[[List[Any]], Any]]) -> Any:
    """The batch of the samples `entries` name ([file, nbytes, layout] each), collated; their files
    are deleted once it is made (a mapping lives on while something refers to it)."""
    if collate_fn is None:
        from torch.utils.data import default_collate

        collate_fn = default_collate
    try:
        return collate_fn([load(path, int(nbytes), layout) for path, nbytes, layout in entries])
    finally:
        for path, _, _ in entries:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


class SampleBatch:
    """A batch of a Python Dataset's samples as the loader receives it: `collated`, what the
    collate function made of them (what iterating the loader yields), and which samples they
    were. samples: int64 (B, 2), each sample's (epoch, index); cases: each one's Dataset index;
    paths: fast or slow; step: this rank's step, from 0."""

    __slots__ = ("collated", "samples", "cases", "paths", "step")

    def __init__(self, collated: Any, samples: "torch.Tensor", cases: List[str],
                 paths: List[str], step: int):
        self.collated, self.samples, self.cases = collated, samples, cases
        self.paths, self.step = paths, step

    def __len__(self) -> int:
        return int(self.samples.shape[0])


def take(message: Dict[str, Any], collate_fn: Optional[Callable[[List[Any]], Any]],
         rank: int) -> SampleBatch:
    """The batch a `python` batch message names, collated from its samples' files."""
    from .loader import LoaderError

    try:
        entries = [(str(f), int(n), str(layout)) for f, n, layout in message["python"]]
        ids = [(int(s[0]), int(s[1]), str(s[2]), str(s[3])) for s in message["samples"]]
        step = int(message["step"])
    except (KeyError, TypeError, ValueError) as err:
        raise LoaderError(f"rank {rank}: a batch message this loader cannot read "
                          f"({type(err).__name__}: {err}); is the job of another version?") from None
    try:
        collated = collate(entries, collate_fn)
    except FileNotFoundError as err:
        raise LoaderError(
            f"rank {rank}: sample file {err.filename} is not in this host's shared memory: a"
            " Python Dataset's batches are read on the host of the job's serving TaskManager") from None
    ids_t = torch.tensor([[s[0], s[1]] for s in ids], dtype=torch.int64).view(-1, 2)
    return SampleBatch(collated, ids_t, [s[2] for s in ids], [s[3] for s in ids], step)
