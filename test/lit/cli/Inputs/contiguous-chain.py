"""contiguous-chain.py N OUT.json: a chain of N materialized values (x = contiguous(x * 1.5 + 1)) over a
64-element float32 PARAM: N intermediate buffers, each alive for two steps."""
import json, sys

n, out = int(sys.argv[1]), sys.argv[2]
nodes = []
def add(op, dtype, src=None, arg=None):
    d = {"id": len(nodes), "op": op, "dtype": dtype}
    if src is not None: d["src"] = src
    if arg is not None: d["arg"] = arg
    nodes.append(d)
    return d["id"]
def param(slot, size):
    return add("PARAM", "float32", [size], {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"})
size = add("CONST", "weakint", arg=64)
o, x = param(0, size), param(1, size)
k, c = add("CONST", "float32", arg={"$": "float", "v": "1.5"}), add("CONST", "float32", arg=1.0)
for _ in range(n):
    x = add("CONTIGUOUS", "float32", [add("ADD", "float32", [add("MUL", "float32", [x, k]), c])])
st = add("STORE", "void", [o, x])
root = add("SINK", "void", [add("AFTER", "float32", [o, st])])
json.dump({"format": "uopc-graph", "version": 1, "semantics": {"pad_fill": "zero"}, "root": root, "nodes": nodes}, open(out, "w"))
