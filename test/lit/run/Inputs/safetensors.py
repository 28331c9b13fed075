"""Writes or prints safetensors files for the lit tests: `safetensors.py w FILE NAME=CODE:v,v,...[:SHAPE] ...`
writes (SHAPE: sizes joined by x, `2x3`, or `-` for a scalar's []; else flat), `safetensors.py r FILE` prints one line per tensor: name, dtype, shape, values.
`safetensors.py raw FILE HEADER DATA_BYTES` writes HEADER (text, as it is) and that many zero bytes after it;
`safetensors.py bigheader FILE N` writes a file whose header size is N bytes, N bytes long (a sparse file)."""
import json
import struct
import sys

FMT = {"F32": "f", "F64": "d", "I32": "i", "I8": "b", "U8": "B", "I64": "q"}
if sys.argv[1] == "raw":
    h = sys.argv[3].encode()
    open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + bytes(int(sys.argv[4])))
elif sys.argv[1] == "bigheader":
    n = int(sys.argv[3])
    with open(sys.argv[2], "wb") as f:
        f.write(struct.pack("<Q", n) + b"{")
        f.truncate(8 + n)
elif sys.argv[1] == "w":
    header, data = {}, b""
    for spec in sys.argv[3:]:
        name, rest = spec.split("=", 1)
        code, vals, *shape = rest.split(":")
        vs = [float(v) if FMT[code] in "fd" else int(v) for v in vals.split(",") if v]
        blob = struct.pack(f"<{len(vs)}{FMT[code]}", *vs)
        dims = [len(vs)] if not shape else [] if shape[0] == "-" else [int(d) for d in shape[0].split("x")]
        header[name] = {"dtype": code, "shape": dims, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header).encode()
    open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + data)
else:
    raw = open(sys.argv[2], "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    for name, t in sorted(json.loads(raw[8:8 + n]).items()):
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        f = FMT[t["dtype"]]
        vals = struct.unpack(f"<{(e - b) // struct.calcsize(f)}{f}", raw[8 + n + b:8 + n + e])
        print(name, t["dtype"], t["shape"], " ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in vals))
