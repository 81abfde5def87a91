"""A training loop written for PyTorch's DataLoader, against the real job: batches that unpack as
the samples collate, len(loader) exact for every pass (or a warning that says how many fewer),
drop_last, sampler.set_epoch(), and the samples' identities still on each batch."""

import json
import re
import shutil
import warnings

import pytest
import torch

from minato_flink import Batch, ConsumedSet, LoaderWarning, launch

CASES, IMAGES = 6, 12  # the dataset and images fixtures'


def kits(data, epochs, batch_size, *args, **kw):
    return launch(str(data), epochs=epochs, batch_size=batch_size, patch=16,
                  extra_args=["--eval-cases", "0", *args], **kw)


def test_should_train_kits19_in_dataloaders_idiom(dataset):
    """18 samples in batches of 4 over 3 epochs: passes of 2, 2 and 1 steps, each exactly
    len(loader) long, as a script sized by it expects; set_epoch agrees with every pass."""
    with kits(dataset, 3, 4) as loader, warnings.catch_warnings():
        warnings.simplefilter("error", LoaderWarning)
        assert (loader.batch_size, loader.drop_last, len(loader.dataset)) == (4, False, CASES)
        passes, samples = [], 0
        for epoch in range(loader.epochs):
            loader.sampler.set_epoch(epoch)
            steps, expected = len(loader), len(loader.sampler)
            got = seen = 0
            for i, (image, label) in enumerate(loader):
                assert image.dtype == torch.float32 and image.shape[1:] == (1, 16, 16, 16)
                assert label.dtype == torch.uint8 and label.shape == image.shape
                got, seen = i + 1, seen + image.shape[0]
            assert (got, seen) == (steps, expected)
            passes.append(got)
            samples += seen
        assert passes == [2, 2, 1] and samples == 3 * CASES
        assert loader._job.wait(60) == 0
        with pytest.warns(LoaderWarning, match=r"set_epoch\(2\), but the loader's next pass is "
                                               r"the run's epoch 3"):
            loader.sampler.set_epoch(2)  # a script that lost count


def test_should_train_images_in_dataloaders_idiom(images):
    with launch(str(images), epochs=2, batch_size=4, patch=32,
                extra_args=["--workload", "images", "--eval-cases", "0"]) as loader:
        assert len(loader.dataset) == IMAGES
        for epoch in range(loader.epochs):
            loader.sampler.set_epoch(epoch)
            assert len(loader) == IMAGES // 4
            got = 0
            for i, (image, target) in enumerate(loader):
                assert image.dtype == torch.float32 and image.shape == (4, 3, 32, 32)
                assert target.dtype == torch.int64 and target.shape == (4,)
                assert 0 <= int(target.min()) and int(target.max()) < 3  # the 3 class folders
                got = i + 1
            assert got == IMAGES // 4
        assert loader._job.wait(60) == 0


@pytest.mark.parametrize("drop_last, sizes, passes", [
    (False, [4, 4, 4, 4, 2], [2, 2, 1]),
    (True, [4, 4, 4, 4], [2, 1, 1]),  # the run's last batch, of 2, left out
])
def test_should_keep_or_drop_the_runs_short_last_batch(dataset, drop_last, sizes, passes):
    with kits(dataset, 3, 4, drop_last=drop_last) as loader:
        assert [len(loader.sampler)] == [passes[0] * 4]
        got, lens, seen = [], [], []
        for epoch in range(loader.epochs):
            lens.append(len(loader))
            got.append(0)
            for batch in loader:
                moved = batch.to("cpu")  # the same batch: its samples' identities with it
                assert isinstance(moved, Batch) and moved.step == batch.step
                assert moved.samples is batch.samples and moved.cases == batch.cases
                image, label = moved
                assert image.shape[0] == label.shape[0] == len(batch.samples) == len(batch.cases)
                seen += [tuple(s) for s in batch.samples.tolist()]
                got[-1] += 1
        assert got == lens == passes and [len(seen)] == [sum(sizes)]
        assert len(set(seen)) == len(seen)
        # Dropped or not, every sample counts as consumed: a job given the state serves none.
        consumed = ConsumedSet.from_wire(loader.state_dict()["consumed"])
        assert len(consumed) == 3 * CASES and all(s in consumed for s in seen)
        assert loader._job.wait(60) == 0


def test_should_warn_how_many_batches_fewer_a_pass_yields_after_a_mid_run_quarantine(
        dataset, tmp_path):
    """A case file rewritten after the first batch, under --on-bad-sample skip: the job
    quarantines it and the run ends short. Every pass yields len(loader) batches but the one the
    run ends in, which says how many it yielded and why; the passes after it have len() 0."""
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    report = tmp_path / "report.json"
    passes, short, seen = [], [], 0
    with kits(data, 6, 2, "--on-bad-sample", "skip", "--report", str(report)) as loader:
        for epoch in range(loader.epochs):
            steps = len(loader)
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                got = 0
                for i, (image, label) in enumerate(loader):
                    if seen == 0:
                        (data / "case_00002_x.npy").write_bytes(b"rewritten, not an array")
                    got, seen = i + 1, seen + image.shape[0]
            passes.append((steps, got))
            short += [str(w.message) for w in said if issubclass(w.category, LoaderWarning)]
        assert loader._job.wait(60) == 0
    r = json.loads(report.read_text())
    assert [q["file"] for q in r["quarantine"]] == ["case_00002_x.npy"]
    assert seen == r["samples"]["delivered"] < 6 * CASES
    # 36 samples in steps of 2: 18, 3 a pass. The run ends where the delivered samples do.
    ends = next(k for k, (steps, got) in enumerate(passes) if got < steps)
    assert all(got == steps for steps, got in passes[:ends])
    assert all(steps == got == 0 for steps, got in passes[ends + 1:])
    steps, got = passes[ends]
    assert len(short) == 1
    assert re.fullmatch(
        rf"rank 0: epoch {ends}'s pass yielded {got} of its {steps} batches \(len\(loader\)\): "
        rf"the job left {6 * CASES - seen} of this rank's {6 * CASES} samples out of the run, "
        r"those of inputs it quarantined during the run \(--on-bad-sample skip; its report "
        r"lists them\)", short[0]), short[0]
