"""Writes gpu-map.test's graphs.
  tinysum: out(4,64) = f(X(4,64)) * W(4,2).sum(axis=1), f eight elementwise ops: a reduction of two elements
           next to much more work per element, so every thread computing it again costs little
usage: gpu-map-cases.py tinysum OUT.json"""
import json, sys


class G:
    def __init__(self):
        self.nodes = []

    def add(self, op, dtype, src=(), arg=None):
        n = {"id": len(self.nodes), "op": op, "dtype": dtype}
        if src: n["src"] = list(src)
        if arg is not None: n["arg"] = arg
        self.nodes.append(n)
        return n["id"]

    def int(self, v): return self.add("CONST", "weakint", arg=v)
    def shape(self, *dims): return self.add("STACK", "weakint", [self.int(d) for d in dims])
    def param(self, slot, numel):
        return self.add("PARAM", "float32", [self.int(numel)],
                        {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"})
    def reshape(self, x, *dims): return self.add("RESHAPE", "float32", [x, self.shape(*dims)])


def build(kind):
    g = G()
    if kind != "tinysum":
        sys.exit(__doc__)
    out = g.reshape(g.param(0, 256), 4, 64)
    x = g.reshape(g.param(1, 256), 4, 64)
    w = g.reshape(g.param(2, 8), 4, 2)
    # a REDUCE sums its source's leading axes: W permuted to (2, 4), summed to (4), then (4, 1)
    wt = g.add("PERMUTE", "float32", [w], [1, 0])
    s = g.reshape(g.add("REDUCE", "float32", [wt], [{"$": "Ops", "v": "ADD"}, 1]), 4, 1)
    v = x
    for k in range(8):
        v = g.add("ADD" if k % 2 else "MUL", "float32", [v, x])
    value = g.add("MUL", "float32", [v, s])
    st = g.add("STORE", "void", [out, value])
    g.add("SINK", "void", [g.add("AFTER", "float32", [out, st])])
    return {"format": "uopc-graph", "version": 1, "producer": {"name": "hand-written", "version": "1"},
            "semantics": {"pad_fill": "zero"}, "nodes": g.nodes, "root": len(g.nodes) - 1}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    json.dump(build(sys.argv[1]), open(sys.argv[2], "w"))
