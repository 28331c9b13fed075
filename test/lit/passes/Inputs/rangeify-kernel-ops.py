# Graphs whose one kernel is large, for rangeify{max-kernel-ops=N}: rangeify-kernel-ops.py KIND N OUT.json
#   diamond: x -> max(x + 1, x), N times (each value read twice in its kernel; 2N ops): x + N
#   tree:    the sum of the N values x + j (j = 0..N-1), added pairwise (2N - 1 ops): N x + N(N-1)/2
#   reshape: x (8 elements) + 1, N times, then a RESHAPE to (2, 4), N more + 1, and a sum over the first
#            axis (4 elements: 2N + 1 ops): x[i] + x[i + 4] + 4N
#   window:  N random values (fixed seed) whose operands are among the last 5 (a DAG of shared values)
# Every value is float32 on CPU; the input is PARAM slot 1, the output PARAM slot 0.
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from uopgraph import Graph  # noqa: E402
kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
g = Graph()
node = g.add
four = node("CONST", "weakint", arg=4)
size_in = node("CONST", "weakint", arg=8) if kind == "reshape" else four
dst = g.param(0, four)
x = g.param(1, size_in)
one = node("CONST", "float32", arg=1.0)
if kind == "diamond":
    for _ in range(n):
        x = node("MAX", "float32", [node("ADD", "float32", [x, one]), x])
elif kind == "tree":
    level = [node("ADD", "float32", [x, node("CONST", "float32", arg=float(j))]) for j in range(n)]
    while len(level) > 1:
        nxt = [node("ADD", "float32", [level[i], level[i + 1]]) for i in range(0, len(level) - 1, 2)]
        level = nxt + level[len(level) - len(level) % 2:]
    x = level[0]
elif kind == "reshape":
    for _ in range(n): x = node("ADD", "float32", [x, one])
    x = node("RESHAPE", "float32", [x, node("STACK", "weakint", [node("CONST", "weakint", arg=2), four])])
    for _ in range(n): x = node("ADD", "float32", [x, one])
    x = node("REDUCE", "float32", [x], [{"$": "Ops", "v": "ADD"}, 1])
elif kind == "window":
    import random
    r = random.Random(14)
    vals = [x]
    half = node("CONST", "float32", arg=0.5)
    while len(vals) <= n: # values stay bounded: x + c, x * c, max(a, b), (a + b) / 2, (a - b) / 2 (x + x when a = b)
        a, b = vals[-1] if r.random() < 0.6 else r.choice(vals[-5:]), r.choice(vals[-5:])
        k = r.randrange(5)
        if k < 2:
            c = node("CONST", "float32", arg=r.choice([0.5, 1.0, -1.0, 0.25] if k == 0 else [0.5, -1.0]))
            vals.append(node("ADD" if k == 0 else "MUL", "float32", [a, c]))
        elif k == 2 or a == b: vals.append(node("MAX" if k == 2 else "ADD", "float32", [a, b]))
        else: vals.append(node("MUL", "float32", [node("ADD" if k == 3 else "SUB", "float32", [a, b]), half]))
    x = vals[-1]
else:
    sys.exit("unknown kind " + kind)
st = node("STORE", "void", [dst, x])
json.dump(g.document(node("SINK", "void", [node("AFTER", "float32", [dst, st])])), open(out, "w"))
