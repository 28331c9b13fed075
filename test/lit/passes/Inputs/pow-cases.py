"""Writes pow-const.json: out_k = x ** c_k for a float32 vector x of 8 (slot 0) and the exponents EXPS
(outputs in slots 1..), and, with --expect DIR, the float32 results tinygrad's simplify_pow gives
(computed here in Python, each op rounded to float32: y * y (* x), sqrt, 1/x; and uopc's quarter exponents) as DIR/expect<k>.bin for
the exponents it rewrites, plus x as DIR/x.bin.
usage: pow-cases.py OUT.json [--expect DIR]"""
import json, math, os, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from uopgraph import Graph  # noqa: E402

EXPS = [0.0, 1.0, 2.0, 3.0, 7.0, 0.5, 2.5, -2.0, -0.5, 0.75, 1.25, 0.3, 1e30]
REWRITTEN = EXPS[:11]
X = [0.75, -1.5, 2.0, 3.1, 0.01, -0.2, 1.0001, 5.5]
X = [v if i not in (5, 1) else abs(v) for i, v in enumerate(X)]  # sqrt of the half and quarter exponents: x >= 0

f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]


def tiny_pow(x, c):
    if c < 0: return tiny_pow(f32(1.0 / x), -c)
    if c == 0: return 1.0
    if int(c - 0.5) + 0.5 == c: return f32(tiny_pow(x, c - 0.5) * f32(math.sqrt(x)))
    if c % 1 in (0.25, 0.75):  # uopc's own rule: x ** n * sqrt(sqrt(x)) (* sqrt(x) first for 0.75)
        r = f32(math.sqrt(f32(math.sqrt(x))))
        if c % 1 == 0.75: r = f32(f32(math.sqrt(x)) * r)
        return f32(tiny_pow(x, c // 1) * r)
    y = tiny_pow(x, c // 2)
    return f32(f32(y * y) * x) if c % 2 == 1 else f32(y * y)


g = Graph()
add = g.add
n8 = add("CONST", "weakint", arg=8)
param = lambda slot: g.param(slot, n8)
x = param(0)
afters = []
for k, c in enumerate(EXPS):
    out = param(k + 1)
    cst = add("CONST", "float32", arg={"$": "float", "v": repr(c)})
    st = add("STORE", "void", [out, add("POW", "float32", [x, add("EXPAND", "float32", [cst, n8])])])
    afters.append(add("AFTER", "float32", [out, st]))
root = add("SINK", "void", afters)
json.dump(g.document(root), open(sys.argv[1], "w"))
if "--expect" in sys.argv:
    d = sys.argv[sys.argv.index("--expect") + 1]
    open(os.path.join(d, "x.bin"), "wb").write(struct.pack("<8f", *X))
    for k, c in enumerate(REWRITTEN):
        open(os.path.join(d, f"expect{k + 1}.bin"), "wb").write(struct.pack("<8f", *[tiny_pow(f32(v), c) for v in X]))
