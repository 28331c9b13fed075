"""exp2-big.py OUT.json X.bin: out = exp2(x) over 300,007 float32 elements (threads.test), and x (seeded)."""
import json, random, struct, sys

N = 300007
nodes = []


def add(op, dtype, src=(), arg=None):
    n = {"id": len(nodes), "op": op, "dtype": dtype}
    if src: n["src"] = list(src)
    if arg is not None: n["arg"] = arg
    nodes.append(n)
    return n["id"]


def param(slot):
    return add("PARAM", "float32", [add("CONST", "weakint", arg=N)],
               {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"})


out, x = param(0), param(1)
st = add("STORE", "void", [out, add("EXP2", "float32", [x])])
add("SINK", "void", [add("AFTER", "float32", [out, st])])
json.dump({"format": "uopc-graph", "version": 1, "producer": {"name": "hand-written", "version": "1"},
           "semantics": {"pad_fill": "zero"}, "nodes": nodes, "root": len(nodes) - 1}, open(sys.argv[1], "w"))
random.seed(1)
open(sys.argv[2], "wb").write(struct.pack(f"<{N}f", *[random.uniform(-30, 30) for _ in range(N)]))
