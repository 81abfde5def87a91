"""Floods a serving job's rank endpoint with idle and hostile connections, then connects the real
training process, and says how long its welcome took and how much the job's memory grew.

    /usr/bin/python3 scripts/endpoint_flood.py --data /dev/shm/demo-ep [--idle 200] [--garbage 20]
        [--wrong-token 20] [--patch 32]

Starts `scripts/run train --accelerator serve --serve-token-file ...` on DATA (one epoch, one
rank), waits for its endpoint (RUN/serving/rank-0.json), reads the JVM's resident set, opens the
idle sockets (connected, silent), the garbage senders (1 KiB of random bytes each) and the
wrong-token hellos, all left open, and then lets MinatoLoader connect. Prints the time from the
loader's first question to its welcome, the JVM's resident set before the flood and its peak over
the next seconds, and the endpoint's log lines about the flood; then takes the run to its end.
Needs torch (Debian: /usr/bin/python3 with python3-torch).
"""

import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
sys.path.insert(0, os.path.join(REPO, "python"))

from minato_flink import MinatoLoader  # noqa: E402
from minato_flink.loader import PROTOCOL_VERSION  # noqa: E402


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS")


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body


def await_endpoint(run_dir: str, job: subprocess.Popen, timeout_s: float) -> tuple:
    path = os.path.join(run_dir, "serving", "rank-0.json")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if job.poll() is not None:
            raise SystemExit(f"error: the job exited ({job.returncode}) before serving; see "
                             f"{run_dir}/job.log")
        try:
            with open(path) as f:
                e = json.load(f)
            return e["host"], int(e["port"])
        except (FileNotFoundError, ValueError):
            time.sleep(0.2)
    raise SystemExit(f"error: {path} did not appear within {timeout_s:.0f} s")


def flood(host: str, port: int, idle: int, garbage: int, wrong: int) -> list:
    rng = random.Random(7)
    sockets = []
    for _ in range(idle):
        sockets.append(socket.create_connection((host, port), timeout=5))
    for _ in range(garbage):
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(rng.randbytes(1024))
        sockets.append(s)
    for i in range(wrong):
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(frame({"type": "hello", "version": PROTOCOL_VERSION, "rank": 0,
                         "prefetch": 2, "token": f"guess{i}"}))
        sockets.append(s)
    return sockets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--patch", type=int, default=32)
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--garbage", type=int, default=20)
    ap.add_argument("--wrong-token", type=int, default=20)
    ap.add_argument("--watch-s", type=float, default=11.0,
                    help="how long after the welcome the resident set is watched")
    args = ap.parse_args()

    run_dir = tempfile.mkdtemp(prefix="endpoint-flood-")
    token = os.urandom(16).hex()
    token_file = os.path.join(run_dir, "token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    log = open(os.path.join(run_dir, "job.log"), "wb")
    job = subprocess.Popen(
        [os.path.join(REPO, "scripts", "run"), "train", "--data", args.data, "--patch",
         str(args.patch), "--epochs", "1", "--accelerator", "serve", "--eval-cases", "0",
         "--run-dir", run_dir, "--serve-token-file", token_file],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        host, port = await_endpoint(run_dir, job, 300)
        time.sleep(2)  # the job's start-up settles
        before = rss_mb(job.pid)  # scripts/run execs the JVM: its pid is the job's
        peak = [before]
        watching = threading.Event()

        def watch() -> None:
            while not watching.is_set():
                peak[0] = max(peak[0], rss_mb(job.pid))
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        t0 = time.monotonic()
        held = flood(host, port, args.idle, args.garbage, args.wrong_token)
        flood_s = time.monotonic() - t0

        loader = MinatoLoader(run_dir=run_dir, rank=0, token=token, pin_memory=False,
                              connect_timeout_s=300)
        start = time.monotonic()
        epochs = loader.epochs  # connects: hello, ready, consumed samples, welcome
        welcome_ms = (time.monotonic() - start) * 1000
        time.sleep(args.watch_s)
        watching.set()
        watcher.join()
        after = rss_mb(job.pid)
        for s in held:
            s.close()
        batches = sum(1 for _ in range(epochs) for _ in loader)
        loader.close()
        code = job.wait(120)
    finally:
        if job.poll() is None:
            job.kill()
        log.close()

    with open(os.path.join(run_dir, "job.log"), errors="replace") as f:
        lines = [ln.rstrip() for ln in f if "RankEndpoint" in ln or "Rank 0: " in ln]
    flood_lines = [ln for ln in lines if "refused" in ln or "closed" in ln]
    print(f"flood: {args.idle} idle, {args.garbage} garbage, {args.wrong_token} wrong-token "
          f"connections opened in {flood_s * 1000:.0f} ms, all held open")
    print(f"real process: welcome {welcome_ms:.1f} ms after its first question; {batches} "
          f"batches, job exit status {code}")
    print(f"job RSS: {before:.1f} MB before the flood, peak {peak[0]:.1f} MB "
          f"(+{peak[0] - before:.1f} MB) within {args.watch_s:.0f} s of the welcome, "
          f"{after:.1f} MB then")
    print(f"endpoint log lines about the flood: {len(flood_lines)}")
    for ln in flood_lines:
        print("  " + ln[ln.find("Rank 0"):] if "Rank 0" in ln else "  " + ln)
    print(f"run directory: {run_dir}")


if __name__ == "__main__":
    main()
