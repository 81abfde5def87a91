"""The examples, fed by the job and by PyTorch's DataLoader: the 3D-UNet alone and as two DDP
ranks, the image classifier alone."""

import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLE = os.path.join(REPO, "python", "examples", "train_unet3d.py")
CLASSIFIER = os.path.join(REPO, "python", "examples", "train_classifier.py")
CASES = 6


def trace(path):
    with open(path) as f:
        return [(int(r["epoch"]), int(r["index"]), int(r["device"]), int(r["step"]))
                for r in csv.DictReader(f)]


@pytest.mark.parametrize("loader", ["minato", "torch"])
def test_should_train_every_sample_once_and_report_as_train_does(dataset, tmp_path, loader):
    report, tr = tmp_path / "r.json", tmp_path / "t.csv"
    subprocess.run([sys.executable, EXAMPLE, "--loader", loader, "--data", dataset, "--patch", "16",
                    "--epochs", "2", "--workers", "2", "--step-ms", "5", "--report", str(report),
                    "--trace", str(tr)], check=True, cwd=tmp_path)
    r = json.loads(report.read_text())
    assert r["steps"] == 2 * CASES // 2 and r["samples"]["delivered"] == 2 * CASES
    assert r["accelerator"]["kind"] == "simulated" and 0 < r["accelerator"]["busy_fraction"] <= 1
    assert r["prep_ms"]["sum"] > 0 and r["bound_s"] > 0 and r["wall_s"] >= r["bound_s"] * 0.5
    stall = r["stall"]
    assert stall["head_of_line_s"] + stall["behind_s"] == pytest.approx(stall["wait_s"], abs=2e-3)
    if loader == "minato":  # the job holds no prepared sample behind an unfinished one
        assert stall["head_of_line_s"] == 0
    rows = trace(tr)
    if loader == "minato":  # the job's epochs are shuffled positions; torch's, dataset indices
        assert sorted((e, i) for e, i, _, _ in rows) == [(e, i) for e in range(2) for i in range(CASES)]
    assert len(rows) == 2 * CASES


def test_should_feed_two_ddp_ranks_their_own_queues_with_equal_steps(dataset, tmp_path):
    run = tmp_path / "run"
    # --redirects 1 --tee 1: Debian's torch 1.13 under Python 3.11 reads the default "0" as
    # None (IntFlag no longer iterates its zero member) and fails before starting a rank.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--redirects", "1", "--tee", "1",
           EXAMPLE, "--loader", "minato", "--data", dataset, "--patch", "16", "--epochs", "3",
           "--batch", "2", "--workers", "2", "--step-ms", "5", "--run-dir", str(run),
           "--trace", str(tmp_path / "t.csv"), "--report", str(tmp_path / "r.json")]
    # torchrun keeps its ranks' logs in a torchelastic_* folder of TMPDIR and leaves it there.
    subprocess.run(cmd, check=True, cwd=tmp_path, timeout=300,
                   env={**os.environ, "TMPDIR": str(tmp_path)})
    rows = [trace(tmp_path / f"t.csv.rank{r}") for r in (0, 1)]
    steps = [json.loads((tmp_path / f"r.json.rank{r}").read_text())["steps"] for r in (0, 1)]
    assert steps[0] == steps[1] == 3 * CASES // 2 // 2 + (3 * CASES // 2) % 2
    for rank in (0, 1):
        assert {d for _, _, d, _ in rows[rank]} == {rank}
        # Dealt by position in the run: rank r gets positions = r mod 2.
        assert all((e * CASES + i) % 2 == rank for e, i, _, _ in rows[rank])
    both = sorted((e, i) for r in rows for e, i, _, _ in r)
    assert both == [(e, i) for e in range(3) for i in range(CASES)]


def test_should_train_the_classifier_on_the_same_images_under_either_loader(images, tmp_path):
    trained = {}
    for loader in ("minato", "torch"):
        report, tr = tmp_path / f"{loader}.json", tmp_path / f"{loader}.csv"
        # A real step: the small CNN on 32-pixel crops, 3 images held out of 12.
        subprocess.run([sys.executable, CLASSIFIER, "--loader", loader, "--data", str(images),
                        "--crop", "32", "--epochs", "2", "--batch", "3", "--workers", "2",
                        "--eval-cases", "3", "--report", str(report), "--trace", str(tr)],
                       check=True, cwd=tmp_path)
        r = json.loads(report.read_text())
        assert r["steps"] == 2 * 9 // 3 and r["samples"]["delivered"] == 2 * 9
        assert r["accelerator"]["kind"] == "cpu" and r["crop"] == 32
        assert r["loss"]["first"] > 0 and r["prep_ms"]["sum"] > 0
        assert r["accuracy"]["images"] == 3 and 0 <= r["accuracy"]["top1"] <= 1
        with open(tr) as f:
            rows = list(csv.DictReader(f))
        if loader == "minato":
            assert sorted((int(r["epoch"]), int(r["index"])) for r in rows) == \
                [(e, i) for e in range(2) for i in range(9)]
        trained[loader] = sorted(r["case"] for r in rows)
    # The same 9 images, twice each, whichever loader read the folder and held 3 out.
    assert trained["minato"] == trained["torch"] and len(set(trained["torch"])) == 9


def test_should_refuse_to_hold_out_more_images_than_the_classes_can_spare(images, tmp_path):
    run = subprocess.run([sys.executable, CLASSIFIER, "--loader", "torch", "--data", str(images),
                          "--eval-cases", "10", "--step-ms", "1"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr.strip() == ("error: cannot hold out 10 of 12 images for evaluation; every "
                                  "class must keep one to train on (at most 9)")


def test_should_count_as_head_of_line_only_a_wait_while_a_later_batch_was_ready():
    sys.path.insert(0, os.path.dirname(EXAMPLE))
    from training_loop import head_of_line
    # Batch 0 waited 0-10 s, batch 1 was ready at 4 s: 6 s held. Batch 1 then came at once;
    # batch 2 waited 10-12 s with nothing ready behind it: behind, not held.
    assert head_of_line([0, 10, 10], [10, 10, 12], [10, 4, 12]) == 6
    assert head_of_line([0], [3], [None]) is None
