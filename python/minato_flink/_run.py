"""A job's run directory as the training process reads it: whether it holds a run that a launch
continues, the run's identity, and whether a saved loader state belongs to the run."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional

# The job's names for them (io.minato.job.RunArgs): the options the run was started with, its
# identity (kept across resumes) and the marker of a run trained to its end.
RUN_ARGS = "run-args"
RUN_ID = "run-id"

# What the job's welcome says of the run, as a saved state keeps it.
_SHAPE = ("epochs", "batch", "samples", "ranks")


def holds_run(run_dir: str) -> bool:
    """Whether the job started a run in `run_dir` (launching there again continues it)."""
    return os.path.isfile(os.path.join(run_dir, RUN_ARGS))


def resume_args(args: List[str], run_dir: str) -> List[str]:
    """A train command line for `run_dir` that continues its run: `--resume R` in place of
    `--run-dir R`. The job checks the other options against the run's (RunArgs.HOW says which
    may change) and refuses any other change in one line."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "--run-dir":
            i += 2
            continue
        if args[i].startswith("--run-dir="):
            i += 1
            continue
        out.append(args[i])
        i += 1
    return out + ["--resume", run_dir]


def run_id(run_dir: Optional[str]) -> Optional[str]:
    """The identity of the run in `run_dir`; None where there is none (yet)."""
    if run_dir is None:
        return None
    try:
        with open(os.path.join(run_dir, RUN_ID), encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


def identity(run_dir: Optional[str], welcome: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """What a saved state says of its run: its identity and folder, and what the job's welcome
    said of it (its epochs, batch, samples a rank and ranks)."""
    run: Dict[str, Any] = {"id": run_id(run_dir), "dir": run_dir}
    if welcome is not None:
        run.update({k: welcome.get(k) for k in _SHAPE})
    return run


def other_run(saved: Optional[Mapping[str, Any]], run_dir: Optional[str]) -> Optional[str]:
    """Why a state saved from another run than the one in `run_dir` does not fit, in one line;
    None where it may."""
    if not saved or not saved.get("id"):
        return None  # saved before its loader reached a run directory: the welcome decides
    now = run_id(run_dir)
    if now is not None and now != saved["id"]:
        return (
            f"the loader state was saved from another run (run {saved['id']} in {saved.get('dir')},"
            f" not run {now} in {run_dir}): give the state saved with this run's model, or"
            f" launch(..., run_dir={saved.get('dir')!r}) to continue that run")
    return None


def other_shape(saved: Optional[Mapping[str, Any]], welcome: Mapping[str, Any], epoch: int,
                steps: int) -> Optional[str]:
    """Why a state does not fit the run the job serves (other epochs, batch, samples or ranks,
    or a position past the run's end), in one line; None where it does."""
    if saved and any(saved.get(k) is not None for k in _SHAPE):
        theirs = {k: saved.get(k) for k in _SHAPE}
        ours = {k: welcome.get(k) for k in _SHAPE}
        if theirs != ours:
            return (
                f"the loader state is of another run ({_describe(theirs)}); the job serves"
                f" {_describe(ours)}: give the state saved with this run's model")
    if "samples" not in welcome or "batch" not in welcome:
        return None
    epochs = int(welcome.get("epochs", 1))
    run_steps = -(-int(welcome["samples"]) // int(welcome["batch"]))
    if epoch > epochs or steps > run_steps:
        return (
            f"the loader state is at epoch {epoch}, step {steps}; the job's run has {epochs}"
            f" epochs of {run_steps} steps in all: give the state saved with this run's model")
    return None


def _describe(run: Mapping[str, Any]) -> str:
    return (f"{run['epochs']} epochs, {run['samples']} samples a rank in batches of {run['batch']},"
            f" {run['ranks']} rank(s)")
