"""The samples a training process has consumed, by identity (epoch, index)."""

from __future__ import annotations

import base64
import zlib
from typing import Dict, Mapping, Tuple

_PACKED = "z:"
_MAX_BITMAP_BYTES = (2**31 - 1 >> 3) + 1  # an index is a Java int


class ConsumedSet:
    """One bitmap of indices per epoch: bit i of byte i // 8, least significant bit first.

    The job keeps the same form for what it has served (its Java `ServedSet`), so that the two
    compare without listing samples. On the wire and in a checkpoint each bitmap is
    zlib-compressed ("z:" and base64): a finished epoch is a periodic pattern, a few hundred bytes
    whatever its size. An epoch's compressed form is kept until the epoch changes."""

    def __init__(self) -> None:
        """An empty set."""
        self._epochs: Dict[int, bytearray] = {}
        self._packed: Dict[int, str] = {}

    def add(self, epoch: int, index: int) -> None:
        """Adds sample (epoch, index)."""
        epoch = int(epoch)
        bits = self._epochs.setdefault(epoch, bytearray())
        byte = index >> 3
        if byte >= len(bits):
            bits.extend(bytes(byte + 1 - len(bits)))
        bits[byte] |= 1 << (index & 7)
        self._packed.pop(epoch, None)

    def __contains__(self, sample: Tuple[int, int]) -> bool:
        epoch, index = sample
        bits = self._epochs.get(int(epoch))
        byte = index >> 3
        return bits is not None and byte < len(bits) and bool(bits[byte] >> (index & 7) & 1)

    def __len__(self) -> int:
        return sum(bin(int.from_bytes(bits, "little")).count("1") for bits in self._epochs.values())

    def to_wire(self) -> Dict[str, str]:
        """Epoch (as text) to "z:" and base64 of the zlib-compressed bitmap: what the job reads,
        and what a checkpoint keeps."""
        wire = {}
        for e, bits in sorted(self._epochs.items()):
            packed = self._packed.get(e)
            if packed is None:
                # Trailing zero bytes dropped, as Java's BitSet.toByteArray does.
                packed = self._packed[e] = _PACKED + base64.b64encode(
                    zlib.compress(bytes(bits).rstrip(b"\0"))).decode("ascii")
            wire[str(e)] = packed
        return wire

    @classmethod
    def from_wire(cls, wire: Mapping[str, str]) -> ConsumedSet:
        """The set `to_wire` gave; plain base64 of a bitmap is read too.

        wire: what to_wire() returned; raises ValueError, in one line naming the epoch, for
        anything else."""
        out = cls()
        if not isinstance(wire, dict):
            raise ValueError("consumed samples: expected a mapping of epoch to bitmap")
        for epoch, text in wire.items():
            try:
                e = int(epoch)
                packed = text.startswith(_PACKED)
                raw = base64.b64decode(text[len(_PACKED):] if packed else text, validate=True)
                if packed:
                    inflater = zlib.decompressobj()
                    bits = bytearray(inflater.decompress(raw, _MAX_BITMAP_BYTES))
                    if inflater.unconsumed_tail or not inflater.eof:
                        raise ValueError("not a whole zlib stream of an epoch's bitmap")
                else:
                    bits = bytearray(raw)
            except (ValueError, TypeError, AttributeError, zlib.error) as err:
                raise ValueError(f"consumed samples of epoch {epoch!r}: {err}") from None
            if e < 0:
                raise ValueError(f"consumed samples: negative epoch {e}")
            out._epochs[e] = bits
        return out
