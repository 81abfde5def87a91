"""MLPerf's KiTS19 training Dataset, as the 3D-UNet example's DataLoader reads it, in a module of
its own so that the job's Python workers can unpickle it by name (dataset_bench.py feeds it to
the job)."""
import random
import time

import numpy as np
import torch

import training_loop


class KitsTrain(torch.utils.data.Dataset):
    """MLPerf's training set: np.load of the whole case, balanced crop, then the transforms."""

    def __init__(self, xs, ys, patch, tail):
        from mlperf_transforms import RandBalancedCrop, get_train_transforms  # SciPy
        self.xs, self.ys, self.tail = xs, ys, tail
        self.crop = RandBalancedCrop((patch,) * 3, 0.4)
        self.transforms = get_train_transforms()

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, idx):
        c0 = time.thread_time()
        data = {"image": np.load(self.xs[idx], mmap_mode="r"),
                "label": np.load(self.ys[idx], mmap_mode="r")}
        data = self.transforms(self.crop(data))
        if self.tail is not None and random.random() < self.tail[0]:
            half = data["image"][:, : data["image"].shape[1] // 2]
            for _ in range(self.tail[1] - 1):  # the job's tail knob: extra noise, thrown away
                np.random.normal(0.0, 0.1, size=half.shape).astype(np.float32)
        return data["image"], data["label"], training_loop.sample_meta(idx, c0)
