"""Batches for PyTorch training scripts from the minato-flink loader job.

`MinatoLoader` takes the place of `torch.utils.data.DataLoader`: rank r of a training script reads
device queue r of a minato-flink job (`train --accelerator serve`), started here (`launch`) or
submitted to a Flink cluster. See the repository's docs/pytorch.md.
"""

from .consumed import ConsumedSet
from .launch import EmbeddedJob, launch
from .loader import (Batch, LoaderError, LoaderWarning, MinatoLoader, ServedDataset,
                     ServedSampler)

__all__ = ["Batch", "ConsumedSet", "EmbeddedJob", "LoaderError", "LoaderWarning", "MinatoLoader",
           "ServedDataset", "ServedSampler", "launch"]
