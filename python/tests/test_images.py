"""Image classification through MinatoLoader: the images workload's batches as a torchvision
user expects them, and a broken image as the job sees it, from the Python side."""

import json
import shutil

import pytest
import torch

from minato_flink import LoaderError, launch

IMAGES = 12  # the images fixture's


@pytest.fixture
def broken(images, tmp_path):
    """The images with one more that is not an image at all."""
    out = tmp_path / "broken"
    shutil.copytree(images, out)
    (out / "class_01" / "broken.jpg").write_bytes(b"not a JPEG")
    return out


def served(data, epochs, *args):
    return launch(str(data), epochs=epochs, batch_size=4, patch=32,
                  extra_args=["--workload", "images", "--eval-cases", "0", *args])


def test_should_serve_images_as_float_nchw_with_their_folders_classes_every_sample_once(images):
    seen = []
    with served(images, 2) as loader:
        for epoch in range(loader.epochs):
            for batch in loader:
                image, label = batch
                size = len(batch.samples)
                assert image.dtype == torch.float32 and image.shape == (size, 3, 32, 32)
                assert label.dtype == torch.int64 and label.shape == (size,)
                # ImageFolder's classes: the folders in name order.
                for cls, name in zip(label.tolist(), batch.cases):
                    assert name.startswith(f"class_{cls:02d}/"), (cls, name)
                seen += [tuple(s) for s in batch.samples.tolist()]
        assert loader._job.wait(60) == 0
    assert sorted(seen) == [(e, i) for e in range(2) for i in range(IMAGES)]


def test_should_stop_in_one_line_naming_a_broken_image(broken):
    with pytest.raises(LoaderError) as raised:
        with served(broken, 1) as loader:
            next(iter(loader))
    message = str(raised.value)
    assert "\n" not in message
    assert "class_01/broken.jpg: not an image ImageIO can read" in message


def test_should_leave_a_broken_image_out_when_told_to_skip_it(broken, tmp_path):
    report = tmp_path / "report.json"
    seen = []
    with served(broken, 1, "--on-bad-sample", "skip", "--report", str(report)) as loader:
        for batch in loader:
            assert all("broken" not in name for name in batch.cases)
            seen += [tuple(s) for s in batch.samples.tolist()]
        assert loader._job.wait(60) == 0
    assert sorted(seen) == [(0, i) for i in range(IMAGES)]
    quarantined = json.loads(report.read_text())["quarantine"]
    assert [q["file"] for q in quarantined] == ["class_01/broken.jpg"]
