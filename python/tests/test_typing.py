"""The package's type hints hold: mypy --strict over it (pyproject's [tool.mypy]), as a user's
type checker reads them through py.typed."""

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (Debian: python3-mypy; .ci/run installs it)")
def test_should_pass_mypy_strict_over_the_package():
    python = os.path.join(REPO, "python")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "minato_flink"], cwd=python,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
