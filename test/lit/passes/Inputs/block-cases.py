"""Writes the GPU block test graphs (group-reduce.test), float32, tinygrad's shapes with implicit broadcasting:
  rowsum:  out(64) = X(64,4096).sum(axis=1)        rows of consecutive elements: a block per row
  center:  out(64,4096) = X - X.max(axis=1)        a row's max, then the row written by the block's threads
  total:   out(1) = X(65536).sum()                  the whole tensor: one block
  colsum:  out(4096) = X(64,4096).sum(axis=0)      a column walk: one thread per column, no block
  rowsum100: out(64) = X(64,100).sum(axis=1)       rows of 100: no block size divides them
  rowsum16: rowsum in float16                       parts and tree in float32, the total rounded once
  data N OUT.bin [e]: N float32 (e: float16) small integers ((i * 7) % 13 - 6), whose sums are exact in any order
usage: block-cases.py rowsum|center|total|colsum|rowsum100|rowsum16 OUT.json | data N OUT.bin [e]"""
import json, os, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from uopgraph import TensorGraph  # noqa: E402


def build(kind):
    g = TensorGraph("float16" if kind == "rowsum16" else "float32")
    if kind in ("rowsum", "rowsum100", "rowsum16"):
        rows, cols = 64, 100 if kind == "rowsum100" else 4096
        out = g.reshape(g.param(0, rows), rows, 1)
        x = g.reshape(g.param(1, rows * cols), rows, cols)
        return g.doc(out, g.reshape(g.reduce("ADD", g.permute(x, 1, 0), 1), rows, 1))
    if kind == "center":
        out = g.reshape(g.param(0, 64 * 4096), 64, 4096)
        x = g.reshape(g.param(1, 64 * 4096), 64, 4096)
        m = g.reshape(g.reduce("MAX", g.permute(x, 1, 0), 1), 64, 1)
        return g.doc(out, g.add("SUB", "float32", [x, m]))
    if kind == "total":
        return g.doc(g.param(0, 1), g.reshape(g.reduce("ADD", g.param(1, 65536), 1), 1))
    if kind == "colsum":
        out, x = g.param(0, 4096), g.reshape(g.param(1, 64 * 4096), 64, 4096)
        return g.doc(out, g.reduce("ADD", x, 1))
    raise SystemExit(__doc__)


if sys.argv[1] == "data":
    n, fmt = int(sys.argv[2]), sys.argv[4] if len(sys.argv) > 4 else "f"
    open(sys.argv[3], "wb").write(struct.pack(f"<{n}{fmt}", *[float((i * 7) % 13 - 6) for i in range(n)]))
else:
    json.dump(build(sys.argv[1]), open(sys.argv[2], "w"))
