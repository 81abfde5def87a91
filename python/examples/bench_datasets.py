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


class BytesDataset(Dataset):
    """Costs nothing to prepare and is all bytes: each sample a float32 tensor of `kib` KiB, so
    that what a batch costs the training process is its transport alone."""

    def __init__(self, n: int, kib: int):
        self.n, self.elements = n, kib * 1024 // 4

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((self.elements,), float(index))


def classification_preset(crop: int):
    """torchvision's classification reference's training preset with its defaults
    (references/classification/presets.py, ClassificationPresetTrain): a random resized crop
    (bilinear), a horizontal flip half the time, the image as a float tensor, normalised."""
    from torchvision import transforms as T

    return T.Compose([
        T.RandomResizedCrop(crop, interpolation=T.InterpolationMode.BILINEAR),
        T.RandomHorizontalFlip(0.5),
        T.PILToTensor(),
        T.ConvertImageDtype(torch.float),
        T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    ])


class HeavyTail(Dataset):
    """`dataset` with a deterministic share of its samples about `factor` times as costly: those
    are prepared `factor` times, the first kept (the others' random draws follow it, so the kept
    bytes are those of a plain `__getitem__` under the same seed)."""

    def __init__(self, dataset: Dataset, share: float, factor: int):
        self.dataset, self.share, self.factor = dataset, share, factor

    def __len__(self) -> int:
        return len(self.dataset)

    def heavy(self, index: int) -> bool:
        return (index * 2654435761 % 2**32) / 2**32 < self.share

    def __getitem__(self, index: int):
        sample = self.dataset[index]
        if self.heavy(index):
            for _ in range(self.factor - 1):
                self.dataset[index]
        return sample


class SeededAsTheJob(Dataset):
    """`dataset` for DataLoader with each sample seeded as the job's Python workers seed theirs:
    Python's `random`, NumPy's and torch's generators from (seed, epoch, index) before
    `__getitem__`, so that both loaders prepare the same samples at the same cost (a random crop's
    cost varies tenfold between samples). Indexed by epoch * len + index, as `EpochSampler`
    yields them."""

    def __init__(self, dataset: Dataset, seed: int):
        self.dataset, self.seed, self.n = dataset, seed, len(dataset)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key: int):
        from minato_flink.samples import seed_generators

        epoch, index = divmod(key, self.n)
        seed_generators(self.seed, epoch, index)
        return self.dataset[index]


class EpochSampler(torch.utils.data.Sampler):
    """Each epoch's indices shuffled, as epoch * n + index for `SeededAsTheJob`."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        order = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        keys = [self.epoch * self.n + int(i) for i in order]
        self.epoch += 1
        return iter(keys)
