"""The job's Python workers: a fork server that loads the Dataset once, and the processes it
forks, each running `dataset[index]` for the samples a fast worker sends it.

    python3 -m minato_flink.worker --dataset MODULE:CALLABLE | FILE.pkl

The job starts one of these per dataset on every TaskManager that prepares: the fork server. It
speaks over its stdin and stdout in frames of a 4-byte big-endian length and a JSON object
(stdout carries frames only; what the Dataset prints goes to stderr, the job's log). It loads
the Dataset, then forks a worker process each time the job asks for one, as PyTorch's
DataLoader forks its workers from a process that has imported torch and built the Dataset: a
worker is ready in milliseconds and shares the server's memory, where starting an interpreter
that imports torch costs about 0.6 s of CPU each (16 of them took 5.4 s on 2 cores).

A forked worker connects to the Unix socket the job named (in a directory only the job's user
can enter) and speaks the same frames there, one request and then its reply at a time; the job
holds the other end, so that a JVM that dies closes it, which ends the worker. Each worker sets
torch to one thread, as DataLoader's workers do.

Fork server:
  {"op": "hello"} -> {"ok": true, "len": N, "describe": "...", "pid": P}
  {"op": "fork", "socket": PATH} -> {"op": "forked", "ok": true, "pid": P}
      | {"op": "forked", "ok": false, "error": "..."}
  and, whenever a worker ends: {"op": "exited", "pid": P, "how": "exit status 0" |
  "killed by signal 9"}
A broken dataset (it does not import or unpickle, or has no len) is one reply
{"ok": false, "fatal": "..."} to the hello, and the server exits. The server exits when its
stdin ends; its workers end when the job closes their sockets.

Worker (over its socket): first {"ok": true, "pid": P}, then
  {"op": "get", "seed": K, "epoch": E, "index": I, "file": PATH}
      -> {"ok": true, "nbytes": B, "layout": "<JSON>", "cpu_ns": C}: the sample is in PATH
      -> {"ok": false, "error": "Type: message", "sample": "<the sample's description>" | null}
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import pickletools
import select
import signal
import socket
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


def _frame(message: Dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return struct.pack(">I", len(body)) + body


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
        self.out.write(_frame(message))
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


def _how(status: int) -> str:
    """A waited-for process's end as the job words it."""
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


def serve_forks(dataset: Any, inp: int, out: BinaryIO) -> None:
    """Forks a worker for each fork request on file descriptor `inp` and says when one ends,
    until `inp` ends. Single-threaded: a worker is forked from a process with no other thread."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup fd is written
    signal.set_wakeup_fd(wake_w)
    pending = b""

    def say(message: Dict[str, Any]) -> None:
        out.write(_frame(message))
        out.flush()

    try:
        while True:
            ready, _, _ = select.select([inp, wake_r], [], [])
            if wake_r in ready:
                os.read(wake_r, 4096)
                while True:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    say({"op": "exited", "pid": pid, "how": _how(status)})
            if inp not in ready:
                continue
            chunk = os.read(inp, 65536)
            if not chunk:
                return
            pending += chunk
            while len(pending) >= 4:
                (n,) = struct.unpack(">I", pending[:4])
                if len(pending) < 4 + n:
                    break
                request = json.loads(pending[4:4 + n])
                pending = pending[4 + n:]
                if request.get("op") != "fork":
                    say({"ok": False, "fatal": f"unknown request {request.get('op')!r}"})
                    return
                try:
                    pid = os.fork()
                except OSError as err:
                    say({"op": "forked", "ok": False, "error": _one_line(err)})
                    continue
                if pid == 0:
                    _worker(dataset, str(request["socket"]), (inp, wake_r, wake_w, out.fileno()))
                say({"op": "forked", "ok": True, "pid": pid})
    finally:
        signal.set_wakeup_fd(-1)
        os.close(wake_r)
        os.close(wake_w)


def _worker(dataset: Any, path: str, server_fds: Any) -> None:
    """A forked worker: leaves the server's pipes, connects to the job at `path` and serves it.
    Never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in server_fds:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        samples.one_thread()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            channel = Channel(conn.makefile("rb"), conn.makefile("wb"))
            channel.send({"ok": True, "pid": os.getpid()})
            serve(dataset, channel)
        code = 0
    except BaseException as err:  # a worker must never return into the server's loop
        sys.stderr.write(f"minato_flink.worker {os.getpid()}: {_one_line(err)}\n")
    finally:
        sys.stderr.flush()
        os._exit(code)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m minato_flink.worker")
    parser.add_argument("--dataset", required=True, help="MODULE:CALLABLE or FILE.pkl")
    args = parser.parse_args(argv)
    # The frames keep the process's stdout; anything the Dataset prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # The job sends nothing more until the hello's reply, so the buffered read takes no fork
    # request away from serve_forks' reads of the descriptor.
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
    serve_forks(dataset, sys.stdin.fileno(), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
