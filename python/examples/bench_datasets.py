"""The Datasets of dataset_bench.py."""

from __future__ import annotations

import time

import numpy as np
import torch
from torch.utils.data import Dataset


class SleepDataset(Dataset):
    """Waits rather than computes."""

    def __init__(self, n: int, sleep_ms: float):
        self.n, self.sleep_s = n, sleep_ms / 1000

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        time.sleep(self.sleep_s)
        return torch.full((256,), float(index))


class CpuDataset(Dataset):
    """Computes: random 3D noise filtered until about `cpu_ms` of one core went into it."""

    def __init__(self, n: int, cpu_ms: float):
        self.n, self.cpu_s = n, cpu_ms / 1000

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        start = time.thread_time()
        volume = np.random.rand(32, 32, 32).astype(np.float32)
        while time.thread_time() - start < self.cpu_s:
            volume = np.sqrt(volume * volume + 0.5).astype(np.float32)
        return torch.from_numpy(volume), index
