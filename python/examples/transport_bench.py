#!/usr/bin/env python3
"""How long one served batch takes to become torch tensors in the training process: wall time and
CPU time of the loader's receiving thread from the batch's header to its tensors (pinned when CUDA
is there), through shared memory and over TCP; and what the training loop itself spends in each
next(): wall time and its own thread's CPU. The job runs embedded; a sleep stands for the step, so
that each copy is timed alone.

  transport_bench.py --data DIR [--patch 128] [--batch 1] [--epochs 4] [--step-ms 50]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))

import minato_flink.loader as loader_module  # noqa: E402
from minato_flink import launch  # noqa: E402


def measure(a, mode):
    times, loop = [], []
    take = loader_module.MinatoLoader._take

    def timed(self, conn, header):
        w0, c0 = time.perf_counter(), time.thread_time()
        batch = take(self, conn, header)
        times.append((time.perf_counter() - w0, time.thread_time() - c0, header["nbytes"]))
        return batch

    loader_module.MinatoLoader._take = timed
    shm = loader_module._SHM
    if mode == "tcp":
        loader_module._SHM = "/nonexistent"  # no shared memory: as from another host
    try:
        with launch(a.data, epochs=a.epochs, batch_size=a.batch, patch=a.patch,
                    extra_args=["--eval-cases", "0"]) as loader:
            for _ in range(loader.epochs):  # a pass over the loader per epoch
                it = iter(loader)
                while True:
                    w0, c0 = time.perf_counter(), time.thread_time()
                    try:
                        next(it)
                    except StopIteration:
                        break
                    loop.append((time.perf_counter() - w0, time.thread_time() - c0))
                    time.sleep(a.step_ms / 1000)
            pinned = loader._pin
    finally:
        loader_module.MinatoLoader._take = take
        loader_module._SHM = shm
    t = times[3:]  # the first batches meet cold pages and a cold interpreter
    print(f"{mode}: {len(t)} batches of {t[0][2] / 2**20:.1f} MiB into {'pinned' if pinned else 'pageable'}"
          f" tensors: {quantiles(t)}")
    print(f"{mode}: the training loop's next(): {quantiles(loop[3:])}")


def quantiles(timings):
    """Wall and CPU (ms), p50 and p90, of (wall s, CPU s, ...) timings."""
    wall = sorted(x[0] * 1e3 for x in timings)
    cpu = sorted(x[1] * 1e3 for x in timings)
    q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]
    return (f"wall p50 {statistics.median(wall):.2f} ms, p90 {q(wall, .9):.2f};"
            f" CPU p50 {statistics.median(cpu):.2f} ms, p90 {q(cpu, .9):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--patch", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--step-ms", type=float, default=50)
    a = ap.parse_args()
    for mode in ("shm", "tcp"):
        measure(a, mode)


if __name__ == "__main__":
    main()
