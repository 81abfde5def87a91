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
import json
import os
import random
import sys
import threading
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loader", choices=("minato", "torch"), required=True)
    ap.add_argument("--data", required=True, help="folder of case_*_x.npy / case_*_y.npy pairs")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--patch", type=int, default=128)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--workers", type=int, default=os.cpu_count(),
                    help="preparation workers: the job's --workers, or the DataLoader's num_workers")
    ap.add_argument("--eval-cases", type=int, default=0, help="the last N cases by name are left out")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tail", help="P,K: a fraction P of samples costs about K times a typical one")
    ap.add_argument("--step-ms", type=float, help="a sleep of MS ms instead of the model's step")
    ap.add_argument("--device", choices=("cpu", "cuda"),
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--run-dir", help="the job's run directory (minato; default: a new temporary one)")
    ap.add_argument("--report", help="write the report JSON here")
    ap.add_argument("--trace", help="write the trace CSV here (epoch,index,case,device,step,path)")
    a = ap.parse_args(argv)
    for name in ("epochs", "patch", "batch", "workers"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1")
    a.tail_pk = None
    if a.tail:
        try:
            p, k = a.tail.split(",")
            a.tail_pk = (float(p), int(k))
        except ValueError:
            ap.error(f"--tail must be P,K (e.g. 0.05,50), not {a.tail!r}")
    if a.loader == "minato" and int(os.environ.get("WORLD_SIZE", "1")) > 1 and not a.run_dir:
        ap.error("--loader minato under torchrun: give every rank the same --run-dir")
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: this PyTorch sees no GPU")
    return a


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
        return data["image"], data["label"], torch.tensor([idx, time.thread_time() - c0])


class GpuSampler(threading.Thread):
    """NVML's utilisation of the device every 200 ms while training (torch.cuda.utilization, which
    needs pynvml); the mean is None without it."""

    def __init__(self, dev):
        super().__init__(daemon=True)
        self.dev, self.samples, self.done = dev, [], threading.Event()
        self.start()

    def run(self):
        while not self.done.wait(0.2):
            try:
                self.samples.append(torch.cuda.utilization(self.dev))
            except Exception:  # no pynvml: no figure rather than a wrong one
                return

    def stop(self):
        self.done.set()
        self.join(1)

    def mean(self):
        return round(sum(self.samples) / len(self.samples), 2) if self.samples else None


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
    prep = []
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for image, label, meta in dl:
            prep += meta[:, 1].tolist()
            rows = [(epoch, int(i), case_number(xs[int(i)]), "fast") for i in meta[:, 0].tolist()]
            yield image, label, rows
    a.prep_s = prep


def minato_batches(a, rank, ranks, holder):
    from minato_flink import launch
    extra = ["--eval-cases", str(a.eval_cases), "--workers", str(a.workers), "--seed", str(a.seed)]
    if a.tail:
        extra += ["--tail", a.tail]
    if rank == 0:
        extra += ["--report", a.run_dir.rstrip("/") + ".report.json"]
    loader = launch(a.data, rank=rank, ranks=ranks, epochs=a.epochs, batch=a.batch, patch=a.patch,
                    run_dir=a.run_dir, extra_args=extra)
    holder.append(loader)
    len(loader)  # connected: the job is up and its first batches are asked for
    yield None
    for epoch in range(a.epochs):  # a pass over the loader per epoch, as over a DataLoader
        for b in loader:
            rows = [(int(e), int(i), c, p)
                    for (e, i), c, p in zip(b.samples.tolist(), b.cases, b.paths)]
            yield b.image, b.label, rows


def main(argv=None):
    a = parse_args(argv)
    rank, ranks = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    random.seed(a.seed + rank)
    np.random.seed(a.seed + rank)
    torch.manual_seed(a.seed)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // ranks))
    cuda = a.device == "cuda"
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    if ranks > 1:
        torch.distributed.init_process_group("nccl" if cuda else "gloo")
    model = opt = loss_fn = None
    if a.step_ms is None:
        from unet3d import DiceCELoss, Unet3D
        model = Unet3D(1, 3, normalization="instancenorm", activation="relu").to(dev)
        if ranks > 1:
            model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[dev.index] if cuda else None)
        loss_fn = DiceCELoss(to_onehot_y=True, use_softmax=True, layout="NCDHW",
                             include_background=False)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)

    holder = []
    launched = time.perf_counter()
    if a.loader == "minato":
        if a.run_dir is None:
            import tempfile
            a.run_dir = os.path.join(tempfile.mkdtemp(prefix="minato-"), "run")
        batches = minato_batches(a, rank, ranks, holder)
        next(batches)  # the job started (a JVM and its MiniCluster): not the loader's time
    else:
        batches = torch_batches(a, rank, ranks)
    trace = []
    losses = []
    events = []
    gpu = GpuSampler(dev) if cuda else None
    busy = wait = 0.0
    steps = samples = 0
    start = time.perf_counter()
    try:
        while True:
            w0 = time.perf_counter()
            try:
                image, label, rows = next(batches)
            except StopIteration:
                if cuda:
                    torch.cuda.synchronize()
                end = time.perf_counter()
                break
            s0 = time.perf_counter()
            wait += s0 - w0
            if model is None:
                time.sleep(a.step_ms / 1000)
            else:
                if cuda:  # timed on the device: no host round trip a step
                    events.append((torch.cuda.Event(enable_timing=True),
                                   torch.cuda.Event(enable_timing=True)))
                    events[-1][0].record()
                image = image.to(dev, non_blocking=True)
                label = label.to(dev, non_blocking=True)
                loss = loss_fn(model(image), label)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if cuda:
                    events[-1][1].record()
                losses.append(loss.detach())
            if not cuda or model is None:
                busy += time.perf_counter() - s0
            trace += [(e, i, c, rank, steps, p) for e, i, c, p in rows]
            steps += 1
            samples += len(rows)
    finally:
        for loader in holder:
            loader.close()
    wall = end - start
    if gpu is not None:
        gpu.stop()
    if events:
        busy = sum(e0.elapsed_time(e1) for e0, e1 in events) / 1e3

    report = {"loader": a.loader, "devices": ranks, "rank": rank, "batch": a.batch,
              "patch": a.patch, "epochs": a.epochs, "seed": a.seed, "workers": a.workers,
              "wall_s": round(wall, 3), "startup_s": round(start - launched, 3), "steps": steps, "samples": {"delivered": samples},
              "accelerator": {"kind": "simulated" if model is None else dev.type,
                              "busy_fraction": round(busy / wall, 4) if wall else None,
                              "wait_s": round(wait, 3)},
              "stall": {"wait_s": round(wait, 3)},
              "cpu": {"cores": os.cpu_count()},
              "loss": {"first": float(losses[0]) if losses else None,
                       "last": float(losses[-1]) if losses else None}}
    prep = getattr(a, "prep_s", None)
    job_report = None
    if a.loader == "minato" and rank == 0 and os.path.exists(a.run_dir.rstrip("/") + ".report.json"):
        with open(a.run_dir.rstrip("/") + ".report.json") as f:
            job_report = json.load(f)
        report["prep_ms"] = job_report.get("prep_ms")
        report["samples"].update({k: job_report["samples"][k] for k in ("fast", "slow")})
    elif a.loader == "torch":
        report["samples"]["slow"] = 0  # one path: no deadline splits the samples
    if a.loader == "torch" and prep:
        ms = np.array(prep) * 1e3
        report["prep_ms"] = {q: round(float(np.percentile(ms, v)), 3)
                             for q, v in (("p50", 50), ("p90", 90), ("p99", 99))}
        report["prep_ms"].update(max=round(float(ms.max()), 3), sum=round(float(ms.sum()), 3))
    if report.get("prep_ms") and steps:
        report["bound_s"] = round(max(report["prep_ms"]["sum"] / 1e3 / os.cpu_count(),
                                      busy), 3)
    if cuda:
        report["gpu"] = {"devices": 1, "memory_peak_bytes": torch.cuda.max_memory_allocated(dev),
                         "utilization_mean_percent": gpu.mean()}
    print(f"{a.loader} rank {rank}: {wall:.1f} s, {steps} steps, {samples} samples "
          f"({samples / wall:.1f}/s), busy {busy / wall:.0%}, waited {wait:.1f} s", file=sys.stderr)
    if a.report:
        path = a.report if ranks == 1 else f"{a.report}.rank{rank}"
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
    if a.trace:
        path = a.trace if ranks == 1 else f"{a.trace}.rank{rank}"
        with open(path, "w") as f:
            f.write("epoch,index,case,device,step,path\n")
            for row in trace:
                f.write(",".join(str(x) for x in row) + "\n")
    if ranks > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    from minato_flink import LoaderError
    try:
        main()
    except LoaderError as err:
        sys.exit(f"error: {err}")
