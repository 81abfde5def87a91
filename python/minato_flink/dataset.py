"""How launch() hands a Dataset object to the job it starts: pickled into a file beside the run
directory, with the interpreter the job's Python workers then run (this one)."""

from __future__ import annotations

import os
import sys
from typing import Any, List


def dataset_args(dataset: Any, run_dir: str) -> List[str]:
    """The job's options for `dataset`: --workload python over its pickled copy."""
    if not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
        raise TypeError(f"launch(dataset=...) takes a map-style Dataset (__getitem__ and "
                        f"__len__), not a {type(dataset).__name__}")
    from .worker import pickled_dataset  # not at import: `-m minato_flink.worker` runs it

    path = run_dir.rstrip("/") + ".dataset.pkl"
    pickled_dataset(dataset, path)
    return ["--workload", "python", "--dataset", path, "--python", sys.executable]
