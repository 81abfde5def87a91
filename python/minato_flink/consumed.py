"""The samples a training process has consumed, by identity (epoch, index)."""

import base64


class ConsumedSet:
    """One bitmap of indices per epoch: bit i of byte i // 8, least significant bit first.

    The job keeps the same form for what it has served (its Java `ServedSet`), so that the two
    compare without listing samples."""

    def __init__(self):
        self._epochs = {}

    def add(self, epoch, index):
        bits = self._epochs.setdefault(int(epoch), bytearray())
        byte = index >> 3
        if byte >= len(bits):
            bits.extend(bytes(byte + 1 - len(bits)))
        bits[byte] |= 1 << (index & 7)

    def __contains__(self, sample):
        epoch, index = sample
        bits = self._epochs.get(int(epoch))
        byte = index >> 3
        return bits is not None and byte < len(bits) and bool(bits[byte] >> (index & 7) & 1)

    def __len__(self):
        return sum(bin(b).count("1") for bits in self._epochs.values() for b in bits)

    def to_wire(self):
        """Epoch (as text) to base64 bitmap: what the job reads, and what a checkpoint keeps."""
        return {str(e): base64.b64encode(bytes(bits)).decode("ascii")
                for e, bits in sorted(self._epochs.items())}

    @classmethod
    def from_wire(cls, wire):
        out = cls()
        if not isinstance(wire, dict):
            raise ValueError("consumed samples: expected a mapping of epoch to bitmap")
        for epoch, text in wire.items():
            try:
                e = int(epoch)
                bits = bytearray(base64.b64decode(text, validate=True))
            except (ValueError, TypeError) as err:
                raise ValueError(f"consumed samples of epoch {epoch!r}: {err}") from None
            if e < 0:
                raise ValueError(f"consumed samples: negative epoch {e}")
            out._epochs[e] = bits
        return out
