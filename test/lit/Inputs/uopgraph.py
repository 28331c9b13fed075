"""A uopc graph document (format v1, ../../../schemas) built node by node: what the lit tests' input scripts
(test/lit/*/Inputs/*.py) share. Each node gets the next id; a document's root is the node given."""


class Graph:
    def __init__(self):
        self.nodes = []

    def add(self, op, dtype, src=(), arg=None):
        """A node; returns its id."""
        n = {"id": len(self.nodes), "op": op, "dtype": dtype}
        if src: n["src"] = list(src)
        if arg is not None: n["arg"] = arg
        self.nodes.append(n)
        return n["id"]

    def param(self, slot, size, dtype="float32"):
        """Buffer PARAM `slot` on CPU whose size is node `size` (a weakint CONST)."""
        return self.add("PARAM", dtype, [size], {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": dtype},
                                                 "device": "CPU"})

    def document(self, root):
        return {"format": "uopc-graph", "version": 1, "producer": {"name": "hand-written", "version": "1"},
                "semantics": {"pad_fill": "zero"}, "nodes": self.nodes, "root": root}




class TensorGraph(Graph):
    """Tensors of dtype `dt` (float32 unless given) by shape, with tinygrad's movement ops and reductions
    (implicit broadcasting: an elementwise op broadcasts a size-1 axis; no EXPAND node), stored by doc()."""
    def __init__(self, dt="float32"):
        super().__init__()
        self.dt = dt

    def int(self, v): return self.add("CONST", "weakint", arg=v)
    def shape(self, *dims): return self.add("STACK", "weakint", [self.int(d) for d in dims])
    def param(self, slot, numel, dtype=None): return super().param(slot, self.int(numel), dtype or self.dt)
    def reshape(self, x, *dims): return self.add("RESHAPE", self.dt, [x, self.shape(*dims)])
    def permute(self, x, *p): return self.add("PERMUTE", self.dt, [x], list(p))
    def reduce(self, op, x, axis): return self.add("REDUCE", self.dt, [x], [{"$": "Ops", "v": op}, axis])

    def doc(self, out, value):
        """The document storing `value` into buffer `out`."""
        st = self.add("STORE", "void", [out, value])
        return self.document(self.add("SINK", "void", [self.add("AFTER", self.dt, [out, st])]))
