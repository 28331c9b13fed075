"""Writes the work-model test graphs (rangeify-work.test), tinygrad's shapes with implicit broadcasting (an
elementwise op broadcasts a size-1 axis; no EXPAND node), as in the corpus:
  mm2:   out(4,5) = (A(4,8) @ B(8,6)) @ C(6,5)    the first product is consumed by the second's reduction
  expmm: out(4,5) = exp2(X(4,8)) @ W(8,5)         an expensive elementwise value feeding a reduction
  cheap: out(4,5) = (X(4,8) * 2) @ W(8,5)         a cheap one (recomputed inside the reduction, as tinygrad)
  rowsum: out(4) = X(4,8).sum(axis=1)               a sum over consecutive elements
  mm16:  out(4,16) = X(4,8) @ W(8,16)                a matmul with 16 output columns
  mm1k:  out(16,1024) = X(16,1024) @ W(1024,1024)    W's columns 4 KiB apart (optimize.test's pack choice)
  mm1k8: out(8,1024) = X(8,1024) @ W(1024,1024)      one row tile: no cache block (optimize.test)
  mm768: out(16,768) = X(16,768) @ W(768,768)        W read in place, rows 3 KiB apart (optimize.test's panel cap)
  mm96:  out(16,96) = X(16,64) @ W(64,96)             96 columns: 4 x 24 lanes fill AVX2's tile (optimize.test)
  mm34:  out(34,16) = (X(34,34) @ W(34,16) + b(34,1)) * s(34,1)   34 rows, which 8 does not divide: a row
         upcast of 17 (Choose.cpp's channelDivisor), the bias and scale consecutive along it (vector-tile.test)
  tinysum: out(4,64) = f(X(4,64)) * W(4,2).sum(axis=1), f eight elementwise ops: a reduction of two elements
         next to much more work per element (gpu-map.test: every GPU thread may compute it again)
  colsum: out(65536) = X(16,65536).sum(axis=0)     a column walk: each row 256 KiB further (optimize.test's strip)
  colsum8: out(8) = X(4096,8).sum(axis=0)            columns 32 bytes apart: less than a line, no strip
  fc:    out(1,256) = X(1,1024) @ W(256,1024).T     a fully connected layer at batch 1 (optimize.test: 4 rows a time)
  rowsum1k: out(256) = X(256,1024).sum(axis=1)      a vector out with no read shared by the rows (optimize.test)
  rowsum2d: out(4,64) = X(4,64,1024).sum(axis=2)    rows in two output loops: not a vector out (optimize.test)
usage: rangeify-work.py mm2|expmm|cheap|rowsum|rowsum1k|rowsum2d|mm16|mm1k|mm1k8|mm768|mm96|mm34|tinysum|colsum|colsum8|fc OUT.json"""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from uopgraph import TensorGraph  # noqa: E402


class G(TensorGraph):
    def matmul(self, a, b, m, k, n):
        """a (m,k) @ b (k,n): (m,1,k) * (1,n,k) broadcast, then the sum over k."""
        a3 = self.reshape(a, m, 1, k)
        b3 = self.reshape(self.permute(b, 1, 0), 1, n, k)
        prod = self.add("MUL", "float32", [a3, b3])
        red = self.add("REDUCE", "float32", [self.permute(prod, 2, 0, 1)], [{"$": "Ops", "v": "ADD"}, 1])
        return self.reshape(red, m, n)


def build(kind):
    g = G()
    if kind in ("rowsum", "rowsum1k"):
        rows, cols = (4, 8) if kind == "rowsum" else (256, 1024)
        out = g.reshape(g.param(0, rows), rows, 1)
        x = g.reshape(g.param(1, rows * cols), rows, cols)
        red = g.add("REDUCE", "float32", [g.permute(x, 1, 0)], [{"$": "Ops", "v": "ADD"}, 1])
        return g.doc(out, g.reshape(red, rows, 1))
    if kind == "rowsum2d":
        out = g.reshape(g.param(0, 256), 4, 64, 1)
        x = g.reshape(g.param(1, 256 * 1024), 4, 64, 1024)
        red = g.add("REDUCE", "float32", [g.permute(x, 2, 0, 1)], [{"$": "Ops", "v": "ADD"}, 1])
        return g.doc(out, g.reshape(red, 4, 64, 1))
    if kind == "mm16":
        out = g.reshape(g.param(0, 64), 4, 16)
        x, w = g.reshape(g.param(1, 32), 4, 8), g.reshape(g.param(2, 128), 8, 16)
        return g.doc(out, g.matmul(x, w, 4, 8, 16))
    if kind in ("mm1k", "mm1k8"):
        m = 16 if kind == "mm1k" else 8
        out = g.reshape(g.param(0, m * 1024), m, 1024)
        x, w = g.reshape(g.param(1, m * 1024), m, 1024), g.reshape(g.param(2, 1024 * 1024), 1024, 1024)
        return g.doc(out, g.matmul(x, w, m, 1024, 1024))
    if kind == "mm768":
        out = g.reshape(g.param(0, 16 * 768), 16, 768)
        x, w = g.reshape(g.param(1, 16 * 768), 16, 768), g.reshape(g.param(2, 768 * 768), 768, 768)
        return g.doc(out, g.matmul(x, w, 16, 768, 768))
    if kind == "mm34":
        out = g.reshape(g.param(0, 34 * 16), 34, 16)
        x, w = g.reshape(g.param(1, 34 * 34), 34, 34), g.reshape(g.param(2, 34 * 16), 34, 16)
        bias, scale = g.reshape(g.param(3, 34), 34, 1), g.reshape(g.param(4, 34), 34, 1)
        var = g.reshape(g.param(5, 34), 34, 1)
        norm = g.add("MUL", "float32", [g.add("ADD", "float32", [g.matmul(x, w, 34, 34, 16), bias]), scale])
        return g.doc(out, g.add("MUL", "float32", [norm, g.add("RECIPROCAL", "float32", [g.add("SQRT", "float32", [var])])]))
    if kind == "mm96":
        out = g.reshape(g.param(0, 16 * 96), 16, 96)
        x, w = g.reshape(g.param(1, 16 * 64), 16, 64), g.reshape(g.param(2, 64 * 96), 64, 96)
        return g.doc(out, g.matmul(x, w, 16, 64, 96))
    if kind == "fc":
        out = g.reshape(g.param(0, 256), 1, 256)
        x3, w3 = g.reshape(g.param(1, 1024), 1, 1, 1024), g.reshape(g.param(2, 256 * 1024), 1, 256, 1024)
        prod = g.add("MUL", "float32", [x3, w3])
        red = g.add("REDUCE", "float32", [g.permute(prod, 2, 0, 1)], [{"$": "Ops", "v": "ADD"}, 1])
        return g.doc(out, g.reshape(red, 1, 256))
    if kind in ("colsum", "colsum8"):
        rows, cols = (16, 65536) if kind == "colsum" else (4096, 8)
        out, x = g.param(0, cols), g.reshape(g.param(1, rows * cols), rows, cols)
        return g.doc(out, g.add("REDUCE", "float32", [x], [{"$": "Ops", "v": "ADD"}, 1]))
    if kind == "tinysum":
        out = g.reshape(g.param(0, 256), 4, 64)
        x = g.reshape(g.param(1, 256), 4, 64)
        w = g.reshape(g.param(2, 8), 4, 2)
        s = g.reshape(g.add("REDUCE", "float32", [g.permute(w, 1, 0)], [{"$": "Ops", "v": "ADD"}, 1]), 4, 1)
        v = x
        for k in range(8):
            v = g.add("ADD" if k % 2 else "MUL", "float32", [v, x])
        return g.doc(out, g.add("MUL", "float32", [v, s]))
    out = g.reshape(g.param(0, 20), 4, 5)
    if kind == "mm2":
        a, b, c = g.reshape(g.param(1, 32), 4, 8), g.reshape(g.param(2, 48), 8, 6), g.reshape(g.param(3, 30), 6, 5)
        return g.doc(out, g.matmul(g.matmul(a, b, 4, 8, 6), c, 4, 6, 5))
    x, w = g.reshape(g.param(1, 32), 4, 8), g.reshape(g.param(2, 40), 8, 5)
    if kind == "expmm": v = g.add("EXP2", "float32", [x])
    else: v = g.add("MUL", "float32", [x, g.add("CONST", "float32", arg={"$": "float", "v": "2.0"})])
    return g.doc(out, g.matmul(v, w, 4, 8, 5))


json.dump(build(sys.argv[1]), open(sys.argv[2], "w"))
