"""The Python workers' side without the job: what a sample file holds and how it comes back, the
seeding rule, and a Dataset the workers could not unpickle refused when it is pickled."""

import os
import random
import sys

import numpy as np
import pytest
import torch

from minato_flink import samples
from minato_flink.worker import pickled_dataset


def test_should_give_back_every_structure_dtype_and_shape_it_wrote(tmp_path):
    value = ({"a": torch.arange(6, dtype=torch.float16).view(2, 3),
              "b": np.arange(6, dtype=np.int64).reshape(2, 3).T},  # not C-contiguous
             3, 2.5, "x", None, True, [torch.zeros(0), torch.tensor(7)],
             torch.ones(3, dtype=torch.bfloat16), np.float32(1.5))
    path = str(tmp_path / "sample")
    nbytes, layout = samples.write(path, value)
    assert os.path.getsize(path) == nbytes
    back = samples.load(path, nbytes, layout)
    assert back[0]["a"].dtype == torch.float16 and back[0]["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert isinstance(back[0]["b"], np.ndarray) and back[0]["b"].tolist() == [[0, 3], [1, 4], [2, 5]]
    assert back[1:6] == (3, 2.5, "x", None, True)
    assert back[6][0].shape == (0,) and back[6][1].shape == () and back[6][1].item() == 7
    assert back[7].dtype == torch.bfloat16 and back[7].tolist() == [1, 1, 1]
    assert back[8] == 1.5


def test_should_refuse_what_it_cannot_carry(tmp_path):
    with pytest.raises(samples.UnsupportedSample, match="a value of type object"):
        samples.write(str(tmp_path / "s"), (object(),))
    assert not (tmp_path / "s").exists()


def test_should_seed_every_generator_from_the_identity_alone():
    def draw(seed, epoch, index):
        samples.seed_generators(seed, epoch, index)
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    assert draw(1, 0, 5) == draw(1, 0, 5)
    assert len({draw(1, 0, 5), draw(1, 1, 5), draw(1, 0, 6), draw(2, 0, 5), draw(-1, 0, 5)}) == 5


class Local(torch.utils.data.Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, index):
        return index


def test_should_refuse_a_dataset_of_the_scripts_main_without_cloudpickle(tmp_path, monkeypatch):
    monkeypatch.setattr(Local, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "Local", Local, raising=False)
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # not installed
    with pytest.raises(TypeError, match=r"refers to Local .*__main__.*install cloudpickle"):
        pickled_dataset(Local(), str(tmp_path / "d.pkl"))
