"""Graphs with hostile names for the names tests (issue 30), written to OUT:
  hostile-graph.py params OUT NAME0 NAME1 NAME2   axpy (out = max(2*x + y, 0)) with its three parameters named
  hostile-graph.py var OUT NAME                   a sum over x[:, :i] with its variable named NAME
  hostile-graph.py twovars OUT NAME1 NAME2        a sum over x[:, j:i]: two variables, NAME1 (i) and NAME2 (j)
A NAME given as hex:HEX is those bytes (decoded as UTF-8 where they are, else kept as surrogate escapes
and written as the JSON escapes of their Latin-1 reading)."""
import json
import sys


def name(arg):
    return bytes.fromhex(arg[4:]).decode("latin-1") if arg.startswith("hex:") else arg


def param(i, slot, size_id, extra=None):
    a = {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"}
    a.update(extra or {})
    return {"id": i, "op": "PARAM", "dtype": "float32", "src": [size_id], "arg": a}


def var(i, slot, nm, lo, hi):
    return {"id": i, "op": "PARAM", "dtype": "weakint", "src": [i - 1],
            "arg": {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "weakint"}, "vmin_vmax": [lo, hi],
                    "multiple_of": 1, "name": nm}}


mode, out = sys.argv[1], sys.argv[2]
names = [name(a) for a in sys.argv[3:]]
if mode == "params":
    nodes = [{"id": 0, "op": "CONST", "dtype": "weakint", "arg": 8},
             param(1, 0, 0, {"name": names[0]}), param(2, 1, 0, {"name": names[1]}), param(3, 2, 0, {"name": names[2]}),
             {"id": 4, "op": "CONST", "dtype": "float32", "arg": {"$": "float", "v": "2.0"}},
             {"id": 5, "op": "MUL", "dtype": "float32", "src": [2, 4]},
             {"id": 6, "op": "ADD", "dtype": "float32", "src": [5, 3]},
             {"id": 7, "op": "CONST", "dtype": "float32", "arg": {"$": "float", "v": "0.0"}},
             {"id": 8, "op": "MAX", "dtype": "float32", "src": [6, 7]},
             {"id": 9, "op": "STORE", "dtype": "void", "src": [1, 8]},
             {"id": 10, "op": "AFTER", "dtype": "float32", "src": [1, 9]},
             {"id": 11, "op": "SINK", "dtype": "void", "src": [10]}]
else:
    two = mode == "twovars"
    nodes = [{"id": 0, "op": "CONST", "dtype": "weakint", "arg": 3}, param(1, 0, 0),
             {"id": 2, "op": "CONST", "dtype": "weakint", "arg": 30}, param(3, 1, 2),
             {"id": 4, "op": "CONST", "dtype": "weakint", "arg": 10},
             {"id": 5, "op": "STACK", "dtype": "weakint", "src": [0, 4]},
             {"id": 6, "op": "RESHAPE", "dtype": "float32", "src": [3, 5]},
             {"id": 7, "op": "CONST", "dtype": "weakint", "arg": 0},
             {"id": 8, "op": "STACK", "dtype": "void"},
             var(9, 2, names[0], 1, 9 if two else 10)]
    if two:
        nodes += [{"id": 10, "op": "STACK", "dtype": "void"}, var(11, 3, names[1], 0, 1),
                  {"id": 12, "op": "STACK", "dtype": "weakint", "src": [7, 11]}]
    else:
        nodes += [{"id": 10, "op": "STACK", "dtype": "void"}, {"id": 11, "op": "CONST", "dtype": "weakint", "arg": 0},
                  {"id": 12, "op": "STACK", "dtype": "weakint", "src": [7, 7]}]
    nodes += [{"id": 13, "op": "STACK", "dtype": "weakint", "src": [0, 9]},
              {"id": 14, "op": "SHRINK", "dtype": "float32", "src": [6, 12, 13]},
              {"id": 15, "op": "PERMUTE", "dtype": "float32", "src": [14], "arg": [1, 0]},
              {"id": 16, "op": "REDUCE", "dtype": "float32", "src": [15], "arg": [{"$": "Ops", "v": "ADD"}, 1]},
              {"id": 17, "op": "STORE", "dtype": "void", "src": [1, 16]},
              {"id": 18, "op": "AFTER", "dtype": "float32", "src": [1, 17]},
              {"id": 19, "op": "SINK", "dtype": "void", "src": [18]}]
doc = {"format": "uopc-graph", "version": 1, "producer": {"name": "hand-written", "version": "1"},
       "semantics": {"pad_fill": "zero"}, "nodes": nodes, "root": nodes[-1]["id"]}
open(out, "w").write(json.dumps(doc))
