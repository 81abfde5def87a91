"""Writes the NumPy-made fixtures NpyInteropTest reads. Run: python3 make_fixtures.py (numpy 2.x)."""
import os
import numpy as np
from numpy.lib import format as npf

here = os.path.dirname(os.path.abspath(__file__))


def save(name, a, version=None):
    with open(os.path.join(here, name), "wb") as f:
        npf.write_array(f, a, version=version)


# a[i, j, k] == 12*i + 4*j + k, so the Java side can check every element by its index.
# Each array is computed first and cast last, so the stored dtype is exactly the one named.
base = np.arange(24).reshape(2, 3, 4)
save("float32.npy", (base / 4).astype("<f4"))
save("float64.npy", (base / 8).astype("<f8"))
save("int8.npy", (base - 12).astype("i1"))
save("uint8.npy", (base * 10 + 10).astype("u1"))
save("int16.npy", ((base - 12) * 1000).astype("<i2"))
save("uint16.npy", (base * 2500).astype("<u2"))
save("int32.npy", ((base - 12) * 100000).astype("<i4"))
save("uint32.npy", (base * 180000000).astype("<u4"))
save("int64.npy", ((base - 12) * 10**15).astype("<i8"))
save("uint64.npy", np.array([0, 1, 2**63, 2**64 - 1], dtype="<u8"))
save("bool.npy", base % 3 == 0)
save("float16.npy", np.array([0, -0.0, 1, -2, 0.5, 65504, 2**-24, 2**-14, np.inf, -np.inf, np.nan], dtype="<f2"))
save("float32_be.npy", (base / 4).astype(">f4"))
save("int16_be.npy", ((base - 12) * 1000).astype(">i2"))
save("fortran_2d.npy", np.asfortranarray(np.arange(6).reshape(2, 3).astype("<i4")))
save("fortran_3d.npy", np.asfortranarray(base.astype("<f4")))
save("v1.npy", base.astype("<f4"), version=(1, 0))
save("v2.npy", base.astype("<f4"), version=(2, 0))
save("v3.npy", base.astype("<f4"), version=(3, 0))
save("scalar.npy", np.array(3.5, dtype="<f8"))
save("empty.npy", np.zeros((0,), dtype="<f4"))
