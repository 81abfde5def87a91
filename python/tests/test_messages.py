"""What the job says reaches the training script through `logging`, under the `minato_flink`
logger, as it happens: its warnings as events it writes in a structured form, the launcher's own
lines (a rebuild) before the job starts. The whole console stays in the run directory."""

import logging
import os
import shlex
import shutil

from conftest import REPO
from minato_flink import launch

CASES = 6  # the dataset fixture's


def every_batch(loader):
    while loader.epoch < loader.epochs:
        yield from loader


def test_should_log_a_file_quarantined_mid_run_as_it_happens(dataset, tmp_path, caplog):
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    caplog.set_level(logging.WARNING, logger="minato_flink")
    run = tmp_path / "run"
    trained = 0
    with launch(str(data), epochs=8, batch=2, patch=16, run_dir=str(run),
                extra_args=["--eval-cases", "0", "--on-bad-sample", "skip"]) as loader:
        for batch in every_batch(loader):
            if trained == 0:
                (data / "case_00002_x.npy").write_bytes(b"rewritten, not an array")
            trained += len(batch)
        passes_ended = caplog.records[-1].created if caplog.records else None
        assert loader._job.wait(60) == 0
    quarantined = [r for r in caplog.records if r.name == "minato_flink.job"
                   and getattr(r, "job_logger", None) == "io.minato.loader.Quarantine"]
    assert quarantined, [r.getMessage() for r in caplog.records]
    q = quarantined[0]
    assert q.levelno == logging.WARNING
    assert "case_00002_x.npy" in q.getMessage() and "\n" not in q.getMessage()
    assert passes_ended is not None and q.created <= passes_ended  # while the loop ran
    assert trained < 8 * CASES
    # The full console and the job's events stay in the run directory.
    assert "case_00002_x.npy" in (run / "events.jsonl").read_text()
    assert "training: " in (run / "console.log").read_text()


def test_should_log_a_broken_image_left_out(images, tmp_path, caplog):
    data = tmp_path / "broken"
    shutil.copytree(images, data)
    (data / "class_01" / "broken.jpg").write_bytes(b"not a JPEG")
    caplog.set_level(logging.WARNING, logger="minato_flink")
    with launch(str(data), epochs=1, batch=4, patch=32,
                extra_args=["--workload", "images", "--eval-cases", "0",
                            "--on-bad-sample", "skip"]) as loader:
        for _ in loader:
            pass
        assert loader._job.wait(60) == 0
    said = [r for r in caplog.records if "class_01/broken.jpg" in r.getMessage()]
    assert said and all(r.levelno == logging.WARNING for r in said), \
        [r.getMessage() for r in caplog.records]


def test_should_log_the_launchers_rebuild_before_the_first_batch(dataset, monkeypatch, caplog):
    """A stand-in launcher that says what scripts/run says before a build, then runs it."""
    line = "building minato-flink (mvn install -DskipTests; a stand-in) ..."
    monkeypatch.setenv("MINATO_LAUNCHER", shlex.join(
        ["sh", "-c", f'echo "{line}" >&2; exec "$0" "$@"', os.path.join(REPO, "scripts", "run")]))
    caplog.set_level(logging.INFO, logger="minato_flink")
    with launch(dataset, epochs=1, batch=2, patch=16, extra_args=["--eval-cases", "0"]) as loader:
        next(iter(loader))
        rebuild = [r for r in caplog.records if r.getMessage() == line]
        assert rebuild and rebuild[0].levelno == logging.WARNING
        assert rebuild[0].name == "minato_flink.console"
        # The job's own progress comes as INFO events.
        assert any(r.name == "minato_flink.job" and r.levelno == logging.INFO
                   and "serving batches" in r.getMessage() for r in caplog.records)
