"""A Python worker of the job: runs `dataset[index]` for the samples a fast worker sends it.

    python3 -m minato_flink.worker --dataset MODULE:CALLABLE | FILE.pkl

The job starts a pool of these on every TaskManager that prepares, and speaks to each over its
stdin and stdout: frames of a 4-byte big-endian length and a JSON object, one request and then its
reply at a time. Pipes, not a socket: a worker is the child of one JVM, so nothing else may reach
it, no path or port is chosen or cleaned up, and a JVM that dies closes the pipe, which ends the
worker. The Dataset's own prints go to stderr (the job's log): stdout carries frames only.

Requests and replies:
  {"op": "hello"} -> {"ok": true, "len": N, "describe": "...", "pid": P}
  {"op": "get", "seed": K, "epoch": E, "index": I, "file": PATH}
      -> {"ok": true, "nbytes": B, "layout": "<JSON>", "cpu_ns": C}: the sample is in PATH
      -> {"ok": false, "error": "Type: message", "sample": "<the sample's description>" | null}
A broken dataset (it does not import or unpickle, or has no len) is one reply
{"ok": false, "fatal": "..."} to the hello, and the worker exits.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import pickletools
import struct
import sys
import time
from typing import Any, BinaryIO, Dict, List, Optional

from . import samples


def load_dataset(spec: str) -> Any:
    """The Dataset `spec` names: MODULE:CALLABLE (called with no arguments), or a file that
    `pickled_dataset` wrote."""
    if spec.endswith(".pkl") and os.path.isfile(spec):
        with open(spec, "rb") as f:
            saved = pickle.load(f)
        for p in reversed(saved.get("sys_path", [])):
            if p not in sys.path:
                sys.path.insert(0, p)
        return pickle.loads(saved["dataset"])
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"--dataset {spec}: expected MODULE:CALLABLE or a .pkl file")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target()


def pickled_dataset(dataset: Any, path: str) -> None:
    """Writes `dataset` for the workers: pickled (cloudpickle where plain pickle cannot, for a
    class defined in a script's __main__), with this process's sys.path, so that a worker
    imports what this process imports."""
    try:
        body = pickle.dumps(dataset, protocol=pickle.HIGHEST_PROTOCOL)
        if _refers_to_main(body):
            # Pickled by name in a module the workers do not have: their __main__ is this one.
            raise pickle.PicklingError(f"it refers to {type(dataset).__name__} or another "
                                       "name of the script's __main__")
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        try:
            import cloudpickle  # type: ignore[import]
        except ImportError:
            raise TypeError(f"the dataset cannot be pickled for the job's workers ({err}); define "
                            "its class in a module they can import, or install cloudpickle") from None
        body = cloudpickle.dumps(dataset, protocol=pickle.HIGHEST_PROTOCOL)
    with open(path, "wb") as f:
        pickle.dump({"sys_path": [os.path.abspath(p) for p in sys.path], "dataset": body}, f)


def _refers_to_main(body: bytes) -> bool:
    """Whether a pickle names a global of __main__ (a class or function the script defines)."""
    pushed: List[Any] = []  # what each opcode pushed, where it was a string
    memo: Dict[Any, Any] = {}
    for op, arg, _ in pickletools.genops(body):
        if op.name == "GLOBAL" and str(arg).startswith("__main__ "):
            return True
        if op.name == "STACK_GLOBAL" and len(pushed) >= 2 and pushed[-2] == "__main__":
            return True
        if op.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            pushed.append(memo.get(arg))
        else:
            pushed.append(arg if isinstance(arg, str) else None)
    return False


def describe(dataset: Any, index: int) -> Optional[str]:
    """The Dataset's own name for sample `index`: `describe_sample(index)` where it has one, else
    the path of torchvision's DatasetFolder/ImageFolder (`samples[index][0]`); None otherwise."""
    try:
        if hasattr(dataset, "describe_sample"):
            return str(dataset.describe_sample(index))
        listed = getattr(dataset, "samples", None)
        if isinstance(listed, (list, tuple)) and 0 <= index < len(listed):
            entry = listed[index]
            return str(entry[0] if isinstance(entry, (list, tuple)) else entry)
    except Exception:  # a description is a courtesy; the sample's own error is what matters
        return None
    return None


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class Channel:
    """Frames over a pair of binary streams."""

    def __init__(self, inp: BinaryIO, out: BinaryIO):
        self.inp, self.out = inp, out

    def receive(self) -> Optional[Dict[str, Any]]:
        head = self.inp.read(4)
        if len(head) < 4:
            return None
        (n,) = struct.unpack(">I", head)
        body = self.inp.read(n)
        if len(body) < n:
            return None
        message: Dict[str, Any] = json.loads(body)
        return message

    def send(self, message: Dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        self.out.write(struct.pack(">I", len(body)) + body)
        self.out.flush()


def serve(dataset: Any, channel: Channel) -> None:
    """Answers requests until the job closes the pipe."""
    while True:
        request = channel.receive()
        if request is None:
            return
        if request.get("op") != "get":
            channel.send({"ok": False, "fatal": f"unknown request {request.get('op')!r}"})
            return
        index = int(request["index"])
        cpu0 = time.thread_time_ns()
        try:
            samples.seed_generators(int(request["seed"]), int(request["epoch"]), index)
            value = dataset[index]
            nbytes, layout = samples.write(request["file"], value)
        except Exception as err:
            channel.send({"ok": False, "error": _one_line(err), "sample": describe(dataset, index)})
            continue
        channel.send({"ok": True, "nbytes": nbytes, "layout": layout,
                      "cpu_ns": time.thread_time_ns() - cpu0})


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m minato_flink.worker")
    parser.add_argument("--dataset", required=True, help="MODULE:CALLABLE or FILE.pkl")
    args = parser.parse_args(argv)
    # The frames keep the process's stdout; anything the Dataset prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = Channel(sys.stdin.buffer, out)
    hello = channel.receive()
    if hello is None:
        return 0
    try:
        dataset = load_dataset(args.dataset)
        size = len(dataset)
    except BaseException as err:  # an import may raise anything, SystemExit included
        channel.send({"ok": False, "fatal": f"--dataset {args.dataset}: {_one_line(err)}"})
        return 2
    channel.send({"ok": True, "len": size, "describe": " ".join(repr(dataset).split())[:200],
                  "pid": os.getpid()})
    serve(dataset, channel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
