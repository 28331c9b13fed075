"""exp2-big.py OUT.json X.bin: out = exp2(x) over 300,007 float32 elements (threads.test), and x (seeded)."""
import json, os, random, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from uopgraph import Graph  # noqa: E402

N = 300007
g = Graph()
size = g.add("CONST", "weakint", arg=N)
out, x = g.param(0, size), g.param(1, size)
st = g.add("STORE", "void", [out, g.add("EXP2", "float32", [x])])
json.dump(g.document(g.add("SINK", "void", [g.add("AFTER", "float32", [out, st])])), open(sys.argv[1], "w"))
random.seed(1)
open(sys.argv[2], "wb").write(struct.pack(f"<{N}f", *[random.uniform(-30, 30) for _ in range(N)]))
