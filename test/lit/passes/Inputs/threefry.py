"""Writes decompose.test's graph: out(uint64, 8) = THREEFRY(x(uint64, 8), key(uint64, 8)), elementwise."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
from uopgraph import Graph  # noqa: E402

g = Graph()
n = g.add("CONST", "weakint", arg=8)
out, x, key = (g.param(slot, n, "uint64") for slot in range(3))
v = g.add("THREEFRY", "uint64", [x, key])
st = g.add("STORE", "void", [out, v])
json.dump(g.document(g.add("SINK", "void", [g.add("AFTER", "uint64", [out, st])])), open(sys.argv[1], "w"))
