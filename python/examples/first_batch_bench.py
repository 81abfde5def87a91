"""How long launch() takes to the first batch, and where the seconds go.

    /usr/bin/python3 python/examples/first_batch_bench.py --data DIR [--reps 5] [--patch 16]

Each repetition launches the job twice as a script would (the launcher launch() finds:
MINATO_LAUNCHER, the packaged job, or the checkout's scripts/run), takes one batch and closes it.
The first launch is timed as it is; the second runs the job with -Dminato.log.level=INFO, so its
run log has Flink's own INFO lines, whose timestamps split the time into:

- start: launch() to the MiniCluster's start (the launcher's checks, the JVM's start, the command
  line, opening the data set);
- minicluster: starting the embedded cluster (its RPC systems, the BLOB server, the TaskManager,
  the REST endpoint);
- submission: the cluster up to the job submitted;
- deployment: to the serving sink listening (the job's tasks deployed and opened);
- first batch: to the first batch in this process (the connection, RocksDB's start in the
  batcher, the first samples prepared and served).

It also reads the CPU time the job's process (and what its launcher ran) had used at the first
batch of the first launch, which, unlike the seconds, does not grow with what else the machine runs, and times the
launcher alone (`--version`: its checks and a JVM's start). It prints the median, least and
greatest of each over the repetitions, with the machine's load average.
"""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import time

# An installed package (a wheel's, with the packaged job) wins over the checkout's.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import minato_flink  # noqa: E402
from minato_flink import _job, launch  # noqa: E402

# The first line of each milestone in RUN_DIR/minato.log (Flink's and minato's own INFO lines).
MILESTONES = [
    ("minicluster", re.compile(r"MiniCluster .* - Starting Flink Mini Cluster")),
    ("submission", re.compile(r"MiniCluster .* - Flink Mini Cluster started successfully")),
    ("deployment", re.compile(r"Dispatcher .* - Received job submission")),
    ("first batch", re.compile(r"ServingDevice .* serving batches on")),
]
PHASES = ["start", "minicluster", "submission", "deployment", "first batch"]
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def log_times(path):
    """The wall-clock time of each milestone's first line in the run's log."""
    found = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = STAMP.match(line)
            if not m:
                continue
            for name, pattern in MILESTONES:
                if name not in found and pattern.search(line):
                    stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
                    found[name] = stamp.timestamp()
    return found


def cpu_seconds(pid):
    """User and system CPU of process `pid` and of its children that ended (the launcher's)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def first_batch(data, patch):
    """(seconds to the first batch, the job's CPU seconds by then, the loader)."""
    began = time.time()
    loader = launch(data, epochs=1, batch=2, patch=patch, extra_args=["--eval-cases", "0"])
    next(iter(loader))
    return began, time.time(), cpu_seconds(loader._job._proc.pid), loader


def plain(data, patch):
    """A launch as a script makes it: (seconds to the first batch, the job's CPU by then)."""
    began, ended, cpu, loader = first_batch(data, patch)
    loader.close()
    return ended - began, cpu


def split(data, patch):
    """Each phase's seconds of a launch whose job logs at INFO (which costs a little)."""
    options = os.environ.get("JAVA_TOOL_OPTIONS", "")
    os.environ["JAVA_TOOL_OPTIONS"] = (options + " -Dminato.log.level=INFO").strip()
    try:
        began, ended, _, loader = first_batch(data, patch)
    finally:
        os.environ["JAVA_TOOL_OPTIONS"] = options
    run_dir = loader._job.run_dir
    loader.close()
    marks = log_times(os.path.join(run_dir, "minato.log"))
    missing = [name for name, _ in MILESTONES if name not in marks]
    if missing:
        raise SystemExit(f"{run_dir}/minato.log: no line for {', '.join(missing)}")
    points = [began] + [marks[name] for name, _ in MILESTONES] + [ended]
    return {p: b - a for p, a, b in zip(PHASES, points, points[1:])}


def launcher_alone():
    launcher = _job.launcher()
    # Not the packaged job's first archive: one written by --version would hold few classes.
    argv = [a for a in launcher.argv if not a.startswith("-XX:ArchiveClassesAtExit=")]
    began = time.time()
    subprocess.run(argv + ["--version"], env=launcher.environment(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.time() - began


def spread(values):
    return f"{statistics.median(values):6.2f} {min(values):6.2f} {max(values):6.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a data set (scripts/run generate --out DIR)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--patch", type=int, default=16)
    a = ap.parse_args()
    print(f"package: {os.path.dirname(minato_flink.__file__)}; launcher: {_job.launcher().argv[0]}")
    totals, cpus, phases, alone, loads = [], [], {p: [] for p in PHASES}, [], []
    for _ in range(a.reps):
        loads.append(os.getloadavg()[0])
        alone.append(launcher_alone())
        total, cpu = plain(os.path.abspath(a.data), a.patch)
        totals.append(total)
        cpus.append(cpu)
        parts = split(os.path.abspath(a.data), a.patch)
        for p in PHASES:
            phases[p].append(parts[p])
    print(f"{'seconds':28s} median    min    max   ({a.reps} launches, load average "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores)")
    print(f"{'launch() to the first batch':28s} {spread(totals)}")
    print(f"{'the job CPU s by then':28s} {spread(cpus)}")
    print("logging at INFO, by phase:")
    for p in PHASES:
        print(f"  {p:26s} {spread(phases[p])}")
    print(f"{'the launcher alone (--version)':28s} {spread(alone)}")


if __name__ == "__main__":
    main()
