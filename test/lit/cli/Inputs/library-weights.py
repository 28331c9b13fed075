"""Seeded weights and checks for the library's weight tests (library-params.test):
  library-weights.py make MANIFEST DIR   writes DIR/weights.safetensors (every input parameter but the function's
      arguments input<N>), DIR/all.safetensors (every input, for uopc-run --inputs) and DIR/<name>.bin (each
      input's raw bytes, for the library's driver); float32 values of a fixed seed, positive for a name
      holding 'var' (a batchnorm's variance)
  library-weights.py check WANT.safetensors NAME GOT.bin   prints 'NAME matches' when the raw float32 file equals
      tensor NAME of WANT within 1e-5 of its largest magnitude, else what differs (and exits 1)
  library-weights.py flip FILE OFFSET    flips one byte of FILE in place"""
import json
import random
import struct
import sys


def write_safetensors(path, tensors):
    header, blob = {}, b""
    for name in sorted(tensors):
        data = tensors[name]
        header[name] = {"dtype": "F32", "shape": [len(data) // 4], "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}


cmd = sys.argv[1]
if cmd == "make":
    manifest, out = json.load(open(sys.argv[2])), sys.argv[3]
    rng = random.Random(35)
    weights, everything = {}, {}
    for p in manifest["params"]:
        if p["role"] != "input":
            continue
        assert p["dtype"] == "float32" and len(p["devices"]) == 1, p
        name = p.get("name") or f"slot{p['slot']}"
        vals = [rng.uniform(0.5, 1.5) if "var" in name else rng.gauss(0.0, 0.3) for _ in range(p["numel"])]
        data = struct.pack(f"<{len(vals)}f", *vals)
        everything[name] = data
        open(f"{out}/{name}.bin", "wb").write(data)
        if not (name.startswith("input") and name[5:].isdigit()):
            weights[name] = data
    write_safetensors(f"{out}/weights.safetensors", weights)
    write_safetensors(f"{out}/all.safetensors", everything)
elif cmd == "check":
    want = read_safetensors(sys.argv[2])[sys.argv[3]]
    got = open(sys.argv[4], "rb").read()
    if len(got) != len(want):
        sys.exit(f"{sys.argv[3]}: {len(got)} bytes, expected {len(want)}")
    w = struct.unpack(f"<{len(want) // 4}f", want)
    g = struct.unpack(f"<{len(got) // 4}f", got)
    scale = max(1e-30, max(abs(v) for v in w))
    worst = max(range(len(w)), key=lambda i: abs(w[i] - g[i]))
    if abs(w[worst] - g[worst]) > 1e-5 * scale:
        sys.exit(f"{sys.argv[3]}: element {worst} is {g[worst]}, expected {w[worst]}")
    print(f"{sys.argv[3]} matches")
elif cmd == "flip":
    with open(sys.argv[2], "r+b") as f:
        f.seek(int(sys.argv[3]))
        b = f.read(1)
        f.seek(int(sys.argv[3]))
        f.write(bytes([b[0] ^ 0xFF]))
