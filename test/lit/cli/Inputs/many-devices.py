"""many-devices.py D OUT.json: multi_ew (out = a * b + 1, sharded on axis 0) over D devices CPU, CPU:1, ...,
CPU:<D-1>: one kernel step per device, and parameters with D devices each."""
import json, sys

d, out = int(sys.argv[1]), sys.argv[2]
devs = ["CPU"] + [f"CPU:{i}" for i in range(1, d)]
nodes = []
def add(op, dtype, src=None, arg=None):
    n = {"id": len(nodes), "op": op, "dtype": dtype}
    if src is not None: n["src"] = src
    if arg is not None: n["arg"] = arg
    nodes.append(n)
    return n["id"]
size = add("CONST", "weakint", arg=16)
four = add("CONST", "weakint", arg=4)
shape = add("STACK", "weakint", [four, four])
def param(slot):
    p = add("PARAM", "float32", [size], {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": devs})
    return add("MULTI", "float32", [add("RESHAPE", "float32", [p, shape])], 0)
o, a, b = param(0), param(1), param(2)
one = add("CONST", "float32", arg={"$": "float", "v": "1.0"})
st = add("STORE", "void", [o, add("ADD", "float32", [add("MUL", "float32", [a, b]), one])])
root = add("SINK", "void", [add("AFTER", "float32", [o, st])])
json.dump({"format": "uopc-graph", "version": 1, "semantics": {"pad_fill": "zero"}, "root": root, "nodes": nodes}, open(out, "w"))
