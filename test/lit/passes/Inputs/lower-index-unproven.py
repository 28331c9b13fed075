"""A kernel graph whose index is not proven in bounds: out[r] = x[r] + 1 for r < 10, where x has 8
elements (test/lit/passes/lower-index.test). lower-index must gate the read of x with r < 8."""
import json

P = lambda slot, size: {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"}
nodes = [
    {"id": 0, "op": "CONST", "dtype": "weakint", "arg": 10},
    {"id": 1, "op": "CONST", "dtype": "weakint", "arg": 8},
    {"id": 2, "op": "PARAM", "dtype": "float32", "src": [0], "arg": P(0, 10)},
    {"id": 3, "op": "PARAM", "dtype": "float32", "src": [1], "arg": P(1, 8)},
    {"id": 4, "op": "RANGE", "dtype": "weakint", "src": [0], "arg": [0, {"$": "AxisType", "v": "LOOP"}]},
    {"id": 5, "op": "INDEX", "dtype": "float32", "src": [2, 4]},
    {"id": 6, "op": "INDEX", "dtype": "float32", "src": [3, 4]},
    {"id": 7, "op": "CONST", "dtype": "float32", "arg": {"$": "float", "v": "1.0"}},
    {"id": 8, "op": "ADD", "dtype": "float32", "src": [6, 7]},
    {"id": 9, "op": "STORE", "dtype": "void", "src": [5, 8]},
    {"id": 10, "op": "END", "dtype": "void", "src": [9, 4]},
    {"id": 11, "op": "SINK", "dtype": "void", "src": [10], "arg": {"$": "KernelInfo", "name": "k0"}},
    {"id": 12, "op": "CALL", "dtype": "void", "src": [11, 2, 3], "tag": 0},
    {"id": 13, "op": "AFTER", "dtype": "float32", "src": [2, 12]},
    {"id": 14, "op": "SINK", "dtype": "void", "src": [13]},
]
print(json.dumps({"format": "uopc-graph", "version": 1, "producer": {"name": "lit"},
                  "semantics": {"pad_fill": "invalid"}, "nodes": nodes, "root": 14}))
