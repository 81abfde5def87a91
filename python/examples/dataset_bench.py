"""Samples per second of one Dataset fed by the job's Python workers or by PyTorch's DataLoader.

    python3 python/examples/dataset_bench.py --loader minato|torch \\
        --dataset sleep|cpu|bytes|kits|imagefolder [--workers W] [--samples N] [--batch B] \\
        [--epochs E] [--sleep-ms MS] [--cpu-ms MS] [--kib K] [--data DIR --patch P --crop C] \\
        [--tail P,K] [--step-ms MS]

sleep: each __getitem__ waits MS ms (a read from remote storage); cpu: each computes for about
MS ms of one core; bytes: each is a float32 tensor of K KiB and costs nothing to make (a batch's
transport alone); kits: MLPerf's KiTS19 training Dataset of the 3D-UNet example over the case
pairs in DIR (kits_dataset.py), with its heavy tail inside __getitem__ where --tail is given;
imagefolder: torchvision's ImageFolder over DIR with the classification reference's training
preset at a C crop, where --tail is given a share P of its images prepared K times.
--step-ms: the loop sleeps MS ms a batch, as a training step would. DataLoader prepares the same
samples as the job: each seeded from (--seed, epoch, index) as the job's workers seed theirs.
--pickle-to FILE writes the Dataset for a job submitted to a cluster (--dataset FILE, on this
host), and --connect HOST:PORT reads that job's batches (its --epochs and --batch given here
too). Prints one JSON line: the
loader, the workers, the samples, the samples/s from the first batch to the last (the job's
start-up and DataLoader's worker start are left out) and, with a step, wall/bound (the bound:
the steps alone).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

# In a module of their own: the job's workers unpickle them by name (a class of this script's
# __main__ would take cloudpickle).
from bench_datasets import (  # noqa: E402
    BytesDataset, CpuDataset, EpochSampler, HeavyTail, SeededAsTheJob, SleepDataset,
    classification_preset)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--loader", choices=["minato", "torch"], required=True)
    p.add_argument("--dataset", choices=["sleep", "cpu", "bytes", "kits", "imagefolder"],
                   required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--samples", type=int, default=320)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--sleep-ms", type=float, default=50)
    p.add_argument("--cpu-ms", type=float, default=20)
    p.add_argument("--kib", type=int, default=1280, help="bytes: KiB a sample")
    p.add_argument("--data", help="kits: a folder of case_*_x.npy / case_*_y.npy pairs; "
                                  "imagefolder: a folder of class folders")
    p.add_argument("--patch", type=int, default=128)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--tail", help="kits, imagefolder: P,K, a fraction P of samples costs about "
                                  "K times more")
    p.add_argument("--step-ms", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--pickle-to", metavar="FILE",
                   help="write the Dataset where a job submitted with --dataset FILE reads it, "
                        "and stop")
    p.add_argument("--connect", metavar="HOST:PORT",
                   help="minato: read the batches of a serving job already running (flink run "
                        "... train --workload python --dataset FILE) instead of launching one")
    a = p.parse_args()
    tail = None
    if a.tail:
        share, k = a.tail.split(",")
        tail = (float(share), int(k))
    if a.dataset in ("kits", "imagefolder") and not a.data:
        p.error(f"--dataset {a.dataset} takes --data DIR")
    if a.dataset == "imagefolder":
        from torchvision.datasets import ImageFolder

        ds = ImageFolder(a.data, transform=classification_preset(a.crop))
        if tail:
            ds = HeavyTail(ds, *tail)
    elif a.dataset == "kits":
        from kits_dataset import KitsTrain

        xs = sorted(glob.glob(os.path.join(a.data, "case_*_x.npy")))
        ys = sorted(glob.glob(os.path.join(a.data, "case_*_y.npy")))
        if not xs or len(xs) != len(ys):
            p.error(f"--data {a.data}: no case_*_x.npy / case_*_y.npy pairs")
        ds = KitsTrain(xs, ys, a.patch, tail)
    elif a.dataset == "bytes":
        ds = BytesDataset(a.samples, a.kib)
    else:
        ds = (SleepDataset(a.samples, a.sleep_ms) if a.dataset == "sleep"
              else CpuDataset(a.samples, a.cpu_ms))
    if a.pickle_to:
        from minato_flink.worker import pickled_dataset

        pickled_dataset(ds, a.pickle_to)
        return
    if a.loader == "torch":
        # The same samples as the job prepares: each seeded from (seed, epoch, index).
        loader = DataLoader(SeededAsTheJob(ds, a.seed), batch_size=a.batch,
                            sampler=EpochSampler(len(ds), a.seed), num_workers=a.workers,
                            persistent_workers=a.workers > 0)
        passes, close = (lambda: loader), (lambda: None)
    else:
        from minato_flink import MinatoLoader, launch

        loader = (MinatoLoader(a.connect, rank=0, connect_timeout_s=120) if a.connect else
                  launch(dataset=ds, epochs=a.epochs, batch_size=a.batch, workers=a.workers,
                         seed=a.seed))
        passes, close = (lambda: loader), loader.close
    first, seen, cpu0, steps = None, 0, time.process_time(), 0
    for _ in range(a.epochs):
        for batch in passes():
            n = len(batch[0]) if isinstance(batch, (list, tuple)) else len(batch)
            if first is None:
                first, cpu0 = time.monotonic(), time.process_time()
            else:
                seen += n
                steps += 1
            if a.step_ms:
                time.sleep(a.step_ms / 1000)
    wall = time.monotonic() - first
    cpu = time.process_time() - cpu0
    close()
    print(json.dumps({"loader": a.loader, "dataset": a.dataset, "workers": a.workers,
                      "samples": seen, "samples_per_s": round(seen / wall, 1),
                      "training_process_cpu_s": round(cpu, 2),
                      "training_process_cpu_ms_a_batch": round(1000 * cpu / max(steps, 1), 3),
                      **({"wall_over_bound": round(wall / (steps * a.step_ms / 1000), 3)}
                         if a.step_ms and steps else {})}))


if __name__ == "__main__":
    main()
