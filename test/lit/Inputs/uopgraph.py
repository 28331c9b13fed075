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


