#!/usr/bin/env python3
"""Trains the MLPerf 3D-UNet in PyTorch on a KiTS19-like set, fed by minato-flink or by PyTorch's
own DataLoader, and writes a report with the fields of the job's own `train` report.

  --loader minato   batches from the job (started here through scripts/run / MINATO_LAUNCHER)
  --loader torch    torch.utils.data.DataLoader with MLPerf's NumPy transforms (needs SciPy)

Under torchrun every rank trains on its own device queue (DDP: gloo on the CPU, NCCL on GPUs).
--step-ms MS replaces the model's step by a sleep of MS ms: the loader measured alone.
"""
import argparse
import glob
import os
import random
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import training_loop  # noqa: E402
from kits_dataset import KitsTrain  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    training_loop.add_common_options(
        ap, "preparation workers: the job's --workers, or the DataLoader's num_workers")
    ap.add_argument("--data", required=True, help="folder of case_*_x.npy / case_*_y.npy pairs")
    ap.add_argument("--patch", type=int, default=128)
    ap.add_argument("--eval-cases", type=int, default=0, help="the last N cases by name are left out")
    ap.add_argument("--tail", help="P,K: a fraction P of samples costs about K times a typical one")
    ap.add_argument("--lr", type=float, default=0.1)
    a = ap.parse_args(argv)
    training_loop.check_common_options(ap, a, "patch")
    a.tail_pk = None
    if a.tail:
        try:
            p, k = a.tail.split(",")
            a.tail_pk = (float(p), int(k))
        except ValueError:
            ap.error(f"--tail must be P,K (e.g. 0.05,50), not {a.tail!r}")
    return a


def case_number(path):
    return str(int(os.path.basename(path).split("_")[1]))


def torch_batches(a, rank, ranks):
    """PyTorch's DataLoader: fixed batches in order, shuffled per epoch, drop_last."""
    xs = sorted(glob.glob(os.path.join(a.data, "case_*_x.npy")))
    ys = sorted(glob.glob(os.path.join(a.data, "case_*_y.npy")))
    if not xs or len(xs) != len(ys):
        sys.exit(f"error: {a.data}: no case_*_x.npy / case_*_y.npy pairs")
    n = len(xs) - a.eval_cases
    ds = KitsTrain(xs[:n], ys[:n], a.patch, a.tail_pk)
    sampler = torch.utils.data.distributed.DistributedSampler(
        ds, num_replicas=ranks, rank=rank, shuffle=True, seed=a.seed, drop_last=True)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, sampler=sampler, drop_last=True,
                                     num_workers=a.workers, pin_memory=a.device == "cuda",
                                     persistent_workers=True)
    return training_loop.dataloader_batches(a, dl, sampler, lambda i: case_number(xs[i]))


def main(argv=None):
    a = parse_args(argv)
    ranks = training_loop.Ranks(a)
    random.seed(a.seed + ranks.rank)
    np.random.seed(a.seed + ranks.rank)
    step = None
    if a.step_ms is None:
        from unet3d import DiceCELoss, Unet3D
        model = ranks.parallel(Unet3D(1, 3, normalization="instancenorm", activation="relu"))
        loss_fn = DiceCELoss(to_onehot_y=True, use_softmax=True, layout="NCDHW",
                             include_background=False)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)

        def step(image, label):
            loss = loss_fn(model(image), label)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

    extra = ["--eval-cases", str(a.eval_cases)] + (["--tail", a.tail] if a.tail else [])
    training_loop.train(a, ranks, lambda: torch_batches(a, ranks.rank, ranks.size),
                        (a.data, a.patch, extra), step, {"patch": a.patch})
    ranks.close()


if __name__ == "__main__":
    training_loop.main(main)
