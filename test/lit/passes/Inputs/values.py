"""Writes or prints raw little-endian buffers for the pass tests: `values.py w FILE FMT v...` writes,
`values.py r FMT FILE...` prints each file's values on one line."""
import struct
import sys

if sys.argv[1] == "w":
    path, fmt, vals = sys.argv[2], sys.argv[3], sys.argv[4:]
    conv = float if fmt in "efd" else int
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(vals)}{fmt}", *[conv(v) for v in vals]))
else:
    fmt = sys.argv[2]
    for path in sys.argv[3:]:
        data = open(path, "rb").read()
        n = len(data) // struct.calcsize(fmt)
        print(" ".join(f"{v:g}" if isinstance(v, float) else str(int(v)) for v in struct.unpack(f"<{n}{fmt}", data)))
