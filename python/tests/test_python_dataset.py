"""A user's own map-style Dataset served through the job's Python workers (--workload python),
from the training script's side: batches as default_collate or the script's collate_fn makes
them, every (epoch, index) once by the job's trace, samples that are a function of (seed, epoch,
index), and a __getitem__ that raises or kills its process."""

import csv
import json
import os
import subprocess
import sys

import pytest
import torch

import datasets
from conftest import REPO
from minato_flink import LoaderError, MinatoLoader, launch

PYTHON = sys.executable


def traced(path):
    with open(path) as f:
        return sorted((int(r["epoch"]), int(r["index"])) for r in csv.DictReader(f))


def every_batch(loader):
    for _ in range(loader.epochs):
        yield from loader


def test_should_collate_numpy_volumes_and_trace_every_epoch_and_index_once(tmp_path):
    trace = tmp_path / "trace.csv"
    shapes, identities = set(), []
    with launch(dataset=datasets.Volumes(10), epochs=2, batch_size=4, run_dir=str(tmp_path / "run"),
                extra_args=["--trace", str(trace)]) as loader:
        for batch in every_batch(loader):
            image, label = batch
            assert image.dtype == torch.float32 and label.dtype == torch.uint8
            shapes.add((tuple(image.shape[1:]), tuple(label.shape[1:])))
            # A tuple batch says which samples it holds, as the built-in workloads' do.
            assert batch.samples.shape == (len(image), 2)
            # cases: the Dataset's index of each sample (its volume is filled with it)
            assert batch.cases == [str(round(float(x.mean()))) for x in image]
            assert set(batch.paths) <= {"fast", "slow"}
            identities += [tuple(s) for s in batch.samples.tolist()]
        assert loader._job.wait(60) == 0
    assert shapes == {((1, 8, 8, 8), (1, 8, 8, 8))}
    assert traced(trace) == [(e, i) for e in range(2) for i in range(10)]
    assert sorted(identities) == traced(trace)


def test_should_load_the_dataset_once_and_fork_its_workers_with_one_torch_thread(tmp_path):
    marks = tmp_path / "loads"
    processes, threads, seen = set(), set(), []
    with launch(dataset=datasets.Loads(str(marks), 24), epochs=1, batch_size=4, workers=3,
                run_dir=str(tmp_path / "run")) as loader:
        for index, pid, n in loader:
            seen += index.tolist()
            processes.update(pid.tolist())
            threads.update(n.tolist())
    assert sorted(seen) == list(range(24))
    assert len(processes) >= 2  # several workers prepared
    assert threads == {1}
    # Unpickled twice, whatever the workers: by the job's first look at it and by the fork
    # server; its workers are forked from the server, the dataset already loaded.
    loads = marks.read_text().split()
    assert len(loads) == 2, loads
    assert not processes & {int(p) for p in loads}


def records(tmp_path, name, seed):
    seen = []
    with launch(dataset=datasets.Records(9), epochs=2, batch_size=3, seed=seed,
                run_dir=str(tmp_path / name)) as loader:
        for batch in every_batch(loader):
            assert set(batch) == {"x", "index", "name", "pair", "drawn"}
            assert batch["x"].shape == (len(batch["index"]), 3)
            assert batch["index"].dtype == torch.int64
            assert batch["name"] == [f"item-{i}" for i in batch["index"].tolist()]
            assert batch["pair"][1].dtype == torch.float64
            for k, i in enumerate(batch["index"].tolist()):
                seen.append((i, batch["x"][k].tolist(), batch["pair"][1][k].item(),
                             batch["drawn"][k].item()))
    return sorted(seen)


def test_should_collate_dicts_and_draw_the_same_random_values_for_the_same_seed(tmp_path):
    first = records(tmp_path, "a", seed=5)
    assert [s[0] for s in first] == sorted(list(range(9)) * 2)
    # torch's, Python's and NumPy's draws are a function of (seed, epoch, index): the same again,
    # a different value in the other epoch.
    assert records(tmp_path, "b", seed=5) == first
    assert all(first[2 * i][1:] != first[2 * i + 1][1:] for i in range(9))
    assert records(tmp_path, "c", seed=6) != first


def test_should_hand_samples_of_varying_shapes_to_the_scripts_collate_fn(tmp_path):
    seen = []
    with launch(dataset=datasets.Ragged(7), collate_fn=datasets.pad_collate, epochs=1,
                batch_size=3, run_dir=str(tmp_path / "run")) as loader:
        for padded, lengths, indices in loader:
            assert padded.dtype == torch.int16
            assert padded.shape == (len(indices), int(lengths.max()))
            for row, (n, i) in enumerate(zip(lengths.tolist(), indices.tolist())):
                assert n == i + 1
                assert padded[row, :n].tolist() == list(range(n))
            seen += indices.tolist()
    assert sorted(seen) == list(range(7))


def test_should_serve_a_torchvision_image_folder_with_its_own_transforms(images, tmp_path):
    from torchvision import datasets as tv, transforms as T

    folder = tv.ImageFolder(str(images), transform=T.Compose([
        T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor(),
        T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
    trace = tmp_path / "trace.csv"
    targets = []
    with launch(dataset=folder, epochs=1, batch_size=4, run_dir=str(tmp_path / "run"),
                extra_args=["--trace", str(trace)]) as loader:
        for image, target in loader:
            assert image.dtype == torch.float32 and image.shape == (len(target), 3, 32, 32)
            assert target.dtype == torch.int64
            targets += target.tolist()
        assert loader._job.wait(60) == 0
    assert sorted(targets) == sorted(t for _, t in folder.samples)
    assert traced(trace) == [(0, i) for i in range(len(folder))]


def test_should_stop_in_one_line_naming_the_sample_whose_getitem_raised(tmp_path):
    with pytest.raises(LoaderError) as raised:
        with launch(dataset=datasets.Faulty(8, raises={3}), epochs=1, batch_size=2,
                    run_dir=str(tmp_path / "run")) as loader:
            list(loader)
    message = str(raised.value)
    assert "\n" not in message
    assert "sample 3 (/data/item_003.bin): __getitem__ raised ValueError: cannot decode item 3" \
        in message
    # At once: a restart would prepare the same sample and meet the same error.
    log = (tmp_path / "run" / "minato.log").read_text()
    assert "restarts from its start" not in log and "restarts from checkpoint" not in log


def test_should_quarantine_a_raising_sample_under_skip_and_list_it(tmp_path):
    report = tmp_path / "report.json"
    seen = []
    with launch(dataset=datasets.Faulty(8, raises={3}), epochs=2, batch_size=2,
                run_dir=str(tmp_path / "run"),
                extra_args=["--on-bad-sample", "skip", "--report", str(report)]) as loader:
        for values in every_batch(loader):
            seen += [int(v) for v in values[:, 0].tolist()]
        assert loader._job.wait(60) == 0
    assert sorted(seen) == sorted([i for i in range(8) if i != 3] * 2)
    quarantined = json.loads(report.read_text())["quarantine"]
    assert [q["file"] for q in quarantined] == ["sample 3 (/data/item_003.bin)"]
    assert "ValueError: cannot decode item 3" in quarantined[0]["reason"]


def test_should_replace_a_worker_that_died_and_try_its_sample_once_more(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    seen = []
    with launch(dataset=datasets.Faulty(6, dies={2}, once_dir=str(marks)), epochs=1,
                batch_size=2, run_dir=str(tmp_path / "run")) as loader:
        for values in loader:
            seen += [int(v) for v in values[:, 0].tolist()]
    assert sorted(seen) == list(range(6))
    assert (marks / "died-2").exists()


def test_should_treat_a_sample_whose_worker_dies_twice_as_one_that_raised(tmp_path):
    with pytest.raises(LoaderError, match=r"error: sample 2: the worker process died twice while "
                                          r"preparing it \(Python worker process \d+ ended "
                                          r"\(killed by signal 9\)\)") as raised:
        with launch(dataset=datasets.Faulty(6, dies={2}), epochs=1, batch_size=2,
                    run_dir=str(tmp_path / "run")) as loader:
            list(loader)
    assert "\n" not in str(raised.value)


def run(*args, env=None):
    return subprocess.run([os.path.join(REPO, "scripts", "run"), *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_should_stop_before_training_in_one_line_naming_a_dataset_that_does_not_import(tmp_path):
    done = run("train", "--workload", "python", "--dataset", "no_such_module:make",
               "--python", PYTHON, "--accelerator", "serve", "--run-dir", str(tmp_path / "run"),
               "--no-web-ui")
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("error: --dataset no_such_module:make: ModuleNotFoundError: No "
                                "module named 'no_such_module'"), done.stderr


def test_should_refuse_the_djl_trainer_for_a_python_dataset_in_one_line(tmp_path):
    done = run("train", "--workload", "python", "--dataset", "datasets:make_volumes",
               "--run-dir", str(tmp_path / "run"), "--no-web-ui")
    assert done.returncode != 0
    assert "--workload python trains in a PyTorch process: give --accelerator serve" \
        in done.stderr, done.stderr


def test_should_train_on_a_dataset_named_by_module_and_callable(tmp_path):
    """What a cluster runs: every TaskManager that prepares imports the module."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(datasets.__file__))
    run_dir, trace = tmp_path / "run", tmp_path / "trace.csv"
    job = subprocess.Popen(
        [os.path.join(REPO, "scripts", "run"), "train", "--workload", "python", "--dataset",
         "datasets:make_volumes", "--python", PYTHON, "--accelerator", "serve", "--epochs",
         "1", "--batch", "3", "--run-dir", str(run_dir), "--trace", str(trace), "--no-web-ui",
         "--progress-interval", "0", "--no-plots"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with MinatoLoader(run_dir=str(run_dir)) as loader:
            batches = [(image.shape, label.shape) for image, label in loader]
        assert job.wait(120) == 0
    finally:
        if job.poll() is None:
            job.kill()
    assert batches == [((3, 1, 8, 8, 8), (3, 1, 8, 8, 8))] * 2
    assert traced(trace) == [(0, i) for i in range(6)]


def test_should_serve_a_restarted_process_exactly_what_its_checkpoint_lacks(tmp_path):
    """The batches a process lost come again prepared anew from their identities: the same
    values, and every (epoch, index) once over the checkpoint and the rest."""
    run = str(tmp_path / "run")

    def ids(batch):
        return [(i, tuple(x)) for i, x in zip(batch["index"].tolist(), batch["x"].tolist())]

    first = launch(dataset=datasets.Records(6), epochs=3, batch_size=2, run_dir=run)
    job = first._job
    first._job = None  # the job outlives this process's loader, as a restarted script finds it
    before, kept, state = [], [], None
    for step, batch in enumerate(every_batch(first)):
        before += ids(batch)
        if step == 1:
            state, kept = first.state_dict(), list(before)
        if step == 3:
            break  # two more batches trained, then the process "crashes" before its checkpoint
    first.close()

    second = MinatoLoader(run_dir=run, rank=0)
    second.load_state_dict(state)
    after = [s for batch in every_batch(second) for s in ids(batch)]
    second.close()
    assert job.wait(60) == 0
    job.close()
    trained = kept + after
    assert sorted(i for i, _ in trained) == sorted(list(range(6)) * 3)
    assert len(set(trained)) == len(trained)  # no sample twice, each epoch's draws its own
    assert set(before) - set(kept) <= set(after)  # the lost batches came again, the same bytes
