"""Host memory for batches is used again only once nothing refers to it."""

import torch

from minato_flink.loader import _Buffers


def test_should_reuse_a_buffer_only_when_no_tensor_or_view_refers_to_it():
    pool = _Buffers(keep=2)
    buf = pool.take(64)
    first = id(buf)
    image = torch.frombuffer(buf, dtype=torch.uint8, count=64)[:32].view(torch.float32)
    del buf
    assert id(pool.take(64)) != first  # a view of it lives
    del image
    assert id(pool.take(64)) == first
    assert id(pool.take(128)) != first  # too small for this batch


def test_should_keep_no_more_buffers_than_told_when_the_process_holds_its_batches():
    pool = _Buffers(keep=2)
    held = [torch.frombuffer(pool.take(16), dtype=torch.uint8) for _ in range(5)]
    assert len(pool._all) == 2
    del held
    assert id(pool.take(16)) in {id(b) for b in pool._all}
