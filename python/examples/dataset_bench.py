"""Samples per second of one Dataset fed by the job's Python workers or by PyTorch's DataLoader.

    python3 python/examples/dataset_bench.py --loader minato|torch --dataset sleep|cpu \\
        [--workers W] [--samples N] [--batch B] [--epochs E] [--sleep-ms MS] [--cpu-ms MS]

sleep: each __getitem__ waits MS ms (a read from remote storage); cpu: each computes for about
MS ms of one core. Prints one JSON line: the loader, the workers, the samples and the samples/s
from the first batch to the last (the job's start-up and DataLoader's worker start are left out).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

# In a module of their own: the job's workers unpickle them by name (a class of this script's
# __main__ would take cloudpickle).
from bench_datasets import CpuDataset, SleepDataset  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--loader", choices=["minato", "torch"], required=True)
    p.add_argument("--dataset", choices=["sleep", "cpu"], required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--samples", type=int, default=320)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--sleep-ms", type=float, default=50)
    p.add_argument("--cpu-ms", type=float, default=20)
    a = p.parse_args()
    ds = (SleepDataset(a.samples, a.sleep_ms) if a.dataset == "sleep"
          else CpuDataset(a.samples, a.cpu_ms))
    if a.loader == "torch":
        loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                            persistent_workers=a.workers > 0)
        passes, close = (lambda: loader), (lambda: None)
    else:
        from minato_flink import launch

        loader = launch(dataset=ds, epochs=a.epochs, batch_size=a.batch, workers=a.workers)
        passes, close = (lambda: loader), loader.close
    first, seen, cpu0 = None, 0, time.process_time()
    for _ in range(a.epochs):
        for batch in passes():
            n = len(batch[0]) if isinstance(batch, (list, tuple)) else len(batch)
            if first is None:
                first, cpu0 = time.monotonic(), time.process_time()
            else:
                seen += n
    wall = time.monotonic() - first
    cpu = time.process_time() - cpu0
    close()
    print(json.dumps({"loader": a.loader, "dataset": a.dataset, "workers": a.workers,
                      "samples": seen, "samples_per_s": round(seen / wall, 1),
                      "training_process_cpu_s": round(cpu, 2)}))


if __name__ == "__main__":
    main()
