"""Helpers of the optimizer's end-to-end lit tests (safetensors files by parameter name):
  safetensors-io.py random MANIFEST OUT.safetensors [SEED]   every input parameter of the manifest, random floats
  safetensors-io.py close A.safetensors B.safetensors RTOL     the same tensors, float32 within RTOL of the largest
  safetensors-io.py closebin A.bin B.bin RTOL                  raw little-endian float32 files, the same way
Exits 1 (with a message) when the files differ beyond RTOL."""
import json
import random
import struct
import sys


def write(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        data = tensors[name]
        header[name] = {"dtype": "F32", "shape": [len(data) // 4], "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            b, e = t["data_offsets"]
            out[name] = struct.unpack(f"<{(e - b) // 4}f", raw[8 + n + b:8 + n + e])
    return out


if sys.argv[1] == "random":
    m = json.load(open(sys.argv[2]))
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    tensors = {p["name"]: struct.pack(f"<{p['numel']}f", *[rng.uniform(-1, 1) for _ in range(p["numel"])])
               for p in m["params"] if p["role"] == "input"}
    write(sys.argv[3], tensors)
else:
    if sys.argv[1] == "closebin":
        raw = [open(f, "rb").read() for f in sys.argv[2:4]]
        a, b = ({"data": struct.unpack(f"<{len(r) // 4}f", r)} for r in raw)
    else:
        a, b = read(sys.argv[2]), read(sys.argv[3])
    rtol = float(sys.argv[4])
    if sorted(a) != sorted(b):
        sys.exit(f"different tensors: {sorted(a)} vs {sorted(b)}")
    for k in a:
        top = max((abs(v) for v in b[k]), default=0.0)
        worst = max((abs(x - y) for x, y in zip(a[k], b[k])), default=0.0)
        if len(a[k]) != len(b[k]) or worst > rtol * top:
            sys.exit(f"{k}: differs by {worst} (largest value {top})")
    print("close")
