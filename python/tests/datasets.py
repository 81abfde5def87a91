"""Small map-style Datasets for the Python workload's tests; the job's workers import this module
(the tests' sys.path travels with the pickled Dataset)."""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any, Dict, Optional, Set, Tuple

import numpy as np
import torch
from torch.utils.data import Dataset


class Volumes(Dataset):
    """A NumPy 3D dataset: (1, D, H, W) float32 volumes and uint8 labels, with a random flip and
    noise drawn from NumPy's global generator, as MLPerf-style transforms do."""

    def __init__(self, n: int = 10, edge: int = 8):
        self.n, self.edge = n, edge

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Tuple[np.ndarray, np.ndarray]:
        e = self.edge
        image = np.full((1, e, e, e), float(index), dtype=np.float32)
        image += np.random.normal(0, 0.1, image.shape).astype(np.float32)
        label = (np.arange(e ** 3, dtype=np.int64).reshape(1, e, e, e) % 3).astype(np.uint8)
        if np.random.rand() < 0.5:
            image, label = image[:, ::-1].copy(), label[:, ::-1].copy()
        return image, label


class Records(Dataset):
    """Each sample a dict of a tensor, a number, a string and a nested list."""

    def __init__(self, n: int = 9):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Dict[str, Any]:
        return {"x": torch.full((3,), float(index)) + torch.rand(3), "index": index,
                "name": f"item-{index}", "pair": [torch.tensor(index), random.random()],
                "drawn": np.random.randint(0, 1 << 30)}


class Ragged(Dataset):
    """Sequences of varying length: a default collate cannot stack them; a padding one can."""

    def __init__(self, n: int = 7):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Tuple[torch.Tensor, int]:
        return torch.arange(index + 1, dtype=torch.int16), index


def pad_collate(batch):
    """Pads a batch of Ragged samples to its longest: (B, L) int16, lengths, indices."""
    longest = max(len(seq) for seq, _ in batch)
    out = torch.zeros(len(batch), longest, dtype=torch.int16)
    for row, (seq, _) in enumerate(batch):
        out[row, :len(seq)] = seq
    return out, torch.tensor([len(s) for s, _ in batch]), torch.tensor([i for _, i in batch])


class Faulty(Dataset):
    """Raises on the indices `raises`; kills its own process on `dies` (every time, or only on
    the first try when `once_dir` keeps a mark of it); sleeps `sleep_s` on `slow`."""

    def __init__(self, n: int = 8, raises: Set[int] = frozenset(), dies: Set[int] = frozenset(),
                 once_dir: Optional[str] = None, slow: Set[int] = frozenset(),
                 sleep_s: float = 0.0):
        self.n, self.raises, self.dies, self.once_dir = n, set(raises), set(dies), once_dir
        self.slow, self.sleep_s = set(slow), sleep_s
        self.samples = [(f"/data/item_{i:03d}.bin", 0) for i in range(n)]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        if index in self.raises:
            raise ValueError(f"cannot decode item {index}")
        if index in self.dies:
            mark = None if self.once_dir is None else os.path.join(self.once_dir, f"died-{index}")
            if mark is None or not os.path.exists(mark):
                if mark is not None:
                    open(mark, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        if index in self.slow:
            time.sleep(self.sleep_s)
        return torch.full((2,), float(index))


class Sleeps(Dataset):
    """Waits rather than computes: a read from remote storage."""

    def __init__(self, n: int = 16, sleep_s: float = 0.05):
        self.n, self.sleep_s = n, sleep_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        time.sleep(self.sleep_s)
        return torch.full((4,), float(index))


class Loads(Dataset):
    """Counts its loads (a line in `marks` each time a process unpickles it) and returns the pid
    and torch thread count of the process that prepared each sample, after sleeping `sleep_s`."""

    def __init__(self, marks: str, n: int = 16, sleep_s: float = 0.05):
        self.marks, self.n, self.sleep_s = marks, n, sleep_s

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        with open(self.marks, "a") as f:
            f.write(f"{os.getpid()}\n")

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Tuple[int, int, int]:
        time.sleep(self.sleep_s)
        return index, os.getpid(), torch.get_num_threads()


def make_volumes() -> Volumes:
    """What --dataset tests.datasets:make_volumes names."""
    return Volumes(6)


def make_faulty() -> Faulty:
    """What --dataset tests.datasets:make_faulty names: index 3 raises."""
    return Faulty(8, raises={3})
