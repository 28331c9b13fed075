"""Writes tinygrad's cumulative sum and cumulative max of one float32 vector of N elements (the corpus case
red_cumsum, N = 33, at another N): x padded by N - 1 in front, its windows laid out by a reshape, expand
and shrink, then out[i] = sum (max) over k of the padded x[i + k], valid for k >= N - 1 - i.
usage: cumsum-n.py N OUT.json"""
import json, sys

n = int(sys.argv[1])
c = lambda i, v: {"id": i, "op": "CONST", "dtype": "weakint", "arg": v}
param = lambda i, slot: {"id": i, "op": "PARAM", "dtype": "float32", "src": [0],
                         "arg": {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"}}
nodes = [c(0, n), param(1, 0), param(2, 1), c(3, n - 1), c(4, 2 * n - 1),
         {"id": 5, "op": "PAD", "dtype": "float32", "src": [2, 3, 4]}, c(6, 1),
         {"id": 7, "op": "STACK", "dtype": "weakint", "src": [6, 4]},
         {"id": 8, "op": "RESHAPE", "dtype": "float32", "src": [5, 7]},
         {"id": 9, "op": "RESHAPE", "dtype": "float32", "src": [8, 4]}, c(10, n + 1),
         {"id": 11, "op": "EXPAND", "dtype": "float32", "src": [9, 10]}, c(12, (n + 1) * (2 * n - 1)),
         {"id": 13, "op": "RESHAPE", "dtype": "float32", "src": [11, 12]}, c(14, 0), c(15, n * 2 * n),
         {"id": 16, "op": "SHRINK", "dtype": "float32", "src": [13, 14, 15]}, c(17, 2 * n),
         {"id": 18, "op": "STACK", "dtype": "weakint", "src": [0, 17]},
         {"id": 19, "op": "RESHAPE", "dtype": "float32", "src": [16, 18]},
         {"id": 20, "op": "STACK", "dtype": "weakint", "src": [14, 14]},
         {"id": 21, "op": "STACK", "dtype": "weakint", "src": [0, 0]},
         {"id": 22, "op": "SHRINK", "dtype": "float32", "src": [19, 20, 21]},
         {"id": 23, "op": "STACK", "dtype": "weakint", "src": [0, 0, 6]},
         {"id": 24, "op": "RESHAPE", "dtype": "float32", "src": [22, 23]},
         {"id": 25, "op": "RESHAPE", "dtype": "float32", "src": [24, 21]},
         {"id": 26, "op": "PERMUTE", "dtype": "float32", "src": [25], "arg": [1, 0]},
         {"id": 27, "op": "PERMUTE", "dtype": "float32", "src": [26], "arg": [1, 0]},
         {"id": 28, "op": "REDUCE", "dtype": "float32", "src": [27], "arg": [{"$": "Ops", "v": "ADD"}, 1]},
         {"id": 29, "op": "STORE", "dtype": "void", "src": [1, 28]},
         {"id": 30, "op": "AFTER", "dtype": "float32", "src": [1, 29]}]
graph = {"format": "uopc-graph", "version": 1, "producer": {"name": "hand-written", "version": "1"},
         "semantics": {"pad_fill": "zero"}, "nodes": nodes + [{"id": 31, "op": "SINK", "dtype": "void", "src": [30]}],
         "root": 31}
json.dump(graph, open(sys.argv[2], "w"))
