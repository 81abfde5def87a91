"""What the examples share: their common options, the job's batches through MinatoLoader, and one
training loop that times the step, writes the trace and a report with the fields of the job's own
`train` report. Each example brings its model, its loss and PyTorch's own DataLoader for the same
data."""
import json
import os
import sys
import threading
import time

import numpy as np
import torch


def add_common_options(ap, workers_help):
    """The options both examples take, with the job's names."""
    ap.add_argument("--loader", choices=("minato", "torch"), required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help=workers_help)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--step-ms", type=float, help="a sleep of MS ms instead of the model's step")
    ap.add_argument("--device", choices=("cpu", "cuda"),
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--run-dir", help="the job's run directory (minato; default: runs/<time> in"
                                      " the working directory)")
    ap.add_argument("--report", help="write the report JSON here")
    ap.add_argument("--trace", help="write the trace CSV here (epoch,index,case,device,step,path)")


def check_common_options(ap, a, *positive):
    """Refuses, in argparse's one line, what no run can do."""
    for name in ("epochs", "batch", "workers", *positive):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.loader == "minato" and int(os.environ.get("WORLD_SIZE", "1")) > 1 and not a.run_dir:
        ap.error("--loader minato under torchrun: give every rank the same --run-dir")
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: this PyTorch sees no GPU")


class Ranks:
    """This process's place under torchrun (RANK, WORLD_SIZE, LOCAL_RANK) and its device; the
    process group is made for several ranks (gloo on the CPU, NCCL on GPUs)."""

    def __init__(self, a):
        self.rank = int(os.environ.get("RANK", "0"))
        self.size = int(os.environ.get("WORLD_SIZE", "1"))
        torch.manual_seed(a.seed)
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // self.size))
        self.cuda = a.device == "cuda"
        self.device = (torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
                       if self.cuda else torch.device("cpu"))
        if self.cuda:
            torch.cuda.set_device(self.device)
        if self.size > 1:
            torch.distributed.init_process_group("nccl" if self.cuda else "gloo")

    def parallel(self, model):
        """The model on this rank's device, under DDP when there are several ranks."""
        model = model.to(self.device)
        if self.size > 1:
            model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[self.device.index] if self.cuda else None)
        return model

    def close(self):
        if self.size > 1:
            torch.distributed.destroy_process_group()


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


def job_report_path(a):
    return a.run_dir.rstrip("/") + ".report.json"


def minato_batches(a, ranks, holder, data, patch, extra):
    """The job's batches for this rank (the job started here, or found through --run-dir): first
    None once the job serves, then (image, label, trace rows, None) a batch, a pass per epoch."""
    from minato_flink import launch
    extra = ["--workers", str(a.workers), "--seed", str(a.seed), *extra]
    if ranks.rank == 0:
        extra += ["--report", job_report_path(a)]
    loader = launch(data, rank=ranks.rank, ranks=ranks.size, epochs=a.epochs,
                    batch_size=a.batch, patch=patch, run_dir=a.run_dir, extra_args=extra)
    holder.append(loader)
    len(loader)  # connected: the job is up and its first batches are asked for
    yield None
    for epoch in range(a.epochs):  # a pass over the loader per epoch, as over a DataLoader
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            image, label = batch  # and which samples it holds, for the trace
            rows = [(int(e), int(i), c, p)
                    for (e, i), c, p in zip(batch.samples.tolist(), batch.cases, batch.paths)]
            yield image, label, rows, None


def sample_meta(index, cpu0):
    """What a Dataset's __getitem__ returns beside its sample, for dataloader_batches: the index,
    the sample's CPU seconds since `cpu0` (time.thread_time()), and the wall clock it was done at
    (float64: seconds since 1970 need more digits than float32 has)."""
    return torch.tensor([index, time.thread_time() - cpu0, time.time()], dtype=torch.float64)


def dataloader_batches(a, loader, sampler, name):
    """PyTorch's DataLoader side of an example: (image, label, trace rows, ready) a batch, where
    `ready` is when its last sample was done (for the head-of-line split); `name(index)` is the
    trace's case. Sets a.prep_s, each sample's preparation CPU seconds, at the end."""
    prep = []
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for image, label, meta in loader:
            prep += meta[:, 1].tolist()
            rows = [(epoch, int(i), name(int(i)), "fast") for i in meta[:, 0].tolist()]
            yield image, label, rows, float(meta[:, 2].max())
    a.prep_s = prep


def head_of_line(asked, got, ready):
    """Of each wait from asked[i] to got[i] for in-order batch i, the part during which a later
    batch was already ready (ready[j] for j > i: its samples were all done) while the loop waited
    for this one: the head-of-line blocking of a loader that hands batches out in order. None
    where readiness is not known."""
    if not ready or any(r is None for r in ready):
        return None
    held = 0.0
    later = float("inf")
    for i in range(len(ready) - 1, -1, -1):
        held += max(0.0, got[i] - max(asked[i], later))
        later = min(later, ready[i])
    return held


def prep_ms(seconds):
    """The report's prep_ms from per-sample preparation times in seconds."""
    ms = np.array(seconds) * 1e3
    figures = {q: round(float(np.percentile(ms, v)), 3)
               for q, v in (("p50", 50), ("p90", 90), ("p99", 99))}
    figures.update(max=round(float(ms.max()), 3), sum=round(float(ms.sum()), 3))
    return figures


def train(a, ranks, torch_batches, minato_data, step, report_fields, evaluate=None):
    """Runs the loop over --loader's batches and writes the report and the trace.

    torch_batches(): PyTorch's DataLoader side (dataloader_batches);
    minato_data: (data, patch, extra job options) for the job; step(image, label) trains one batch
    on the device and returns its loss, None under --step-ms; report_fields: the example's own;
    evaluate(): after training, on rank 0, the report's fields that score the trained model."""
    holder = []
    launched = time.perf_counter()
    if a.loader == "minato":
        if a.run_dir is None:
            # runs/<time> in the working directory, as the job names its own runs
            a.run_dir = os.path.abspath(os.path.join("runs", time.strftime("%Y%m%d-%H%M%S")))
        batches = minato_batches(a, ranks, holder, *minato_data)
        next(batches)  # the job started (a JVM and its MiniCluster): not the loader's time
    else:
        batches = torch_batches()
    cuda, dev, simulated = ranks.cuda, ranks.device, a.step_ms is not None
    trace, losses, events = [], [], []
    asked, got, ready = [], [], []  # wall clock, for the head-of-line split
    gpu = GpuSampler(dev) if cuda else None
    busy = wait = 0.0
    steps = samples = 0
    start = time.perf_counter()
    try:
        while True:
            w0, a0 = time.perf_counter(), time.time()
            try:
                image, label, rows, done = next(batches)
            except StopIteration:
                if cuda:
                    torch.cuda.synchronize()
                end = time.perf_counter()
                break
            s0 = time.perf_counter()
            wait += s0 - w0
            asked.append(a0)
            got.append(a0 + (s0 - w0))
            ready.append(done)
            if simulated:
                time.sleep(a.step_ms / 1000)
            else:
                if cuda:  # timed on the device: no host round trip a step
                    events.append((torch.cuda.Event(enable_timing=True),
                                   torch.cuda.Event(enable_timing=True)))
                    events[-1][0].record()
                loss = step(image.to(dev, non_blocking=True), label.to(dev, non_blocking=True))
                if cuda:
                    events[-1][1].record()
                losses.append(loss.detach())
            if not cuda or simulated:
                busy += time.perf_counter() - s0
            trace += [(e, i, c, ranks.rank, steps, p) for e, i, c, p in rows]
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

    report = {"loader": a.loader, "devices": ranks.size, "rank": ranks.rank, "batch": a.batch,
              **report_fields, "epochs": a.epochs, "seed": a.seed, "workers": a.workers,
              "wall_s": round(wall, 3), "startup_s": round(start - launched, 3),
              "steps": steps, "samples": {"delivered": samples},
              "accelerator": {"kind": "simulated" if simulated else dev.type,
                              "busy_fraction": round(busy / wall, 4) if wall else None,
                              "wait_s": round(wait, 3)},
              "stall": stall(wait, head_of_line(asked, got, ready) if a.loader == "torch" else 0.0),
              "cpu": {"cores": os.cpu_count()},
              "loss": {"first": float(losses[0]) if losses else None,
                       "last": float(losses[-1]) if losses else None}}
    prep = getattr(a, "prep_s", None)
    if a.loader == "minato" and ranks.rank == 0 and os.path.exists(job_report_path(a)):
        with open(job_report_path(a)) as f:
            job_report = json.load(f)
        report["prep_ms"] = job_report.get("prep_ms")
        report["samples"].update({k: job_report["samples"][k] for k in ("fast", "slow")})
    elif a.loader == "torch":
        report["samples"]["slow"] = 0  # one path: no deadline splits the samples
    if a.loader == "torch" and prep:
        report["prep_ms"] = prep_ms(prep)
    if report.get("prep_ms") and steps:
        report["bound_s"] = round(max(report["prep_ms"]["sum"] / 1e3 / os.cpu_count(), busy), 3)
    if cuda:
        report["gpu"] = {"devices": 1, "memory_peak_bytes": torch.cuda.max_memory_allocated(dev),
                         "utilization_mean_percent": gpu.mean()}
    print(f"{a.loader} rank {ranks.rank}: {wall:.1f} s, {steps} steps, {samples} samples "
          f"({samples / wall:.1f}/s), busy {busy / wall:.0%}, waited {wait:.1f} s", file=sys.stderr)
    if evaluate is not None and ranks.rank == 0:
        report.update(evaluate())
    if a.report:
        path = a.report if ranks.size == 1 else f"{a.report}.rank{ranks.rank}"
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
    if a.trace:
        path = a.trace if ranks.size == 1 else f"{a.trace}.rank{ranks.rank}"
        with open(path, "w") as f:
            f.write("epoch,index,case,device,step,path\n")
            for row in trace:
                f.write(",".join(str(x) for x in row) + "\n")
    return report


def stall(wait, held):
    """The report's stall split, as train's: the job's batches hold no prepared sample behind an
    unfinished one, so its wait is all behind; a DataLoader's wait is head-of-line while a later
    batch was ready."""
    held = min(wait, held) if held is not None else None
    return {"wait_s": round(wait, 3),
            "head_of_line_s": None if held is None else round(held, 3),
            "behind_s": None if held is None else round(wait - held, 3)}


def main(run):
    """Runs an example's main, a LoaderError as one line and exit status 1."""
    from minato_flink import LoaderError
    try:
        run()
    except LoaderError as err:
        sys.exit(f"error: {err}")
