"""The wheel that scripts/wheel makes carries the job: installed into a fresh virtual environment,
it trains from a folder outside the checkout with no MINATO_LAUNCHER, no Maven and no checkout on
the way (Java from the PATH; torch from Debian's packages through --system-site-packages)."""

import glob
import json
import os
import subprocess
import textwrap

import pytest

from conftest import REPO

CASES = 6  # the dataset fixture's

SCRIPT = textwrap.dedent("""
    import json, sys
    import minato_flink
    from minato_flink import _job, launch

    seen, argv = [], _job.launcher().argv
    with launch(sys.argv[1], epochs=2, batch=2, patch=16, extra_args=["--eval-cases", "0"]) as loader:
        for epoch in range(loader.epochs):
            for batch in loader:
                seen += [tuple(s) for s in batch.samples.tolist()]
    print(json.dumps({"package": minato_flink.__file__, "launcher": argv,
                      "seen": seen}))
""")


def _tools_missing():
    # setuptools apart: imported after pip, its distutils shim refuses to load.
    probes = ("import ensurepip, venv, pip, wheel", "import setuptools")
    return any(subprocess.run(["/usr/bin/python3", "-c", p], capture_output=True).returncode
               for p in probes)


@pytest.mark.skipif(_tools_missing() and os.environ.get("CI") != "true",
                    reason="no pip, setuptools, wheel and venv for /usr/bin/python3 (apt-get"
                           " install python3-pip python3-setuptools python3-wheel python3-venv)")
def test_should_train_from_outside_the_checkout_with_only_the_installed_wheel(dataset, tmp_path):
    dist = tmp_path / "dist"
    built = subprocess.run([os.path.join(REPO, "scripts", "wheel"), "--out", str(dist)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = glob.glob(str(dist / "minato_flink-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    # pip comes from the system's site packages; torch and numpy are there already.
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", wheel], check=True,
                   timeout=300)
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("MINATO_LAUNCHER", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the class-data archive goes there
    archives = tmp_path / "cache" / "minato-flink"
    # A job that ends before it serves (here a data folder that is not there) leaves no archive:
    # it would hold a fraction of the classes a start loads, and slow every later start.
    failed = subprocess.run(
        [python, "-c", "import sys; from minato_flink import launch\n"
                       "try:\n    next(iter(launch(sys.argv[1], patch=16)))\n"
                       "except Exception as e:\n    print(e)", str(work / "no-such-folder")],
        cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert "no-such-folder" in failed.stdout, failed.stdout + failed.stderr
    assert not list(archives.glob("*.jsa*")), list(archives.iterdir())
    # The first run writes the packaged job's class-data archive as its job ends; the second
    # checks it and starts with it.
    for written in ("*.jsa.part", "*.jsa"):
        done = subprocess.run([python, "train.py", dataset], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout.strip().splitlines()[-1])
        assert said["package"].startswith(str(venv))
        assert not any(REPO in part for part in said["launcher"]), said["launcher"]
        assert sorted(tuple(s) for s in said["seen"]) == [(e, i) for e in range(2)
                                                          for i in range(CASES)]
        assert len(list(archives.glob(written))) == 1, list(archives.iterdir())
