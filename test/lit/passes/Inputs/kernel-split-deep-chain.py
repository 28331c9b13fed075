# A STORE of an elementwise chain N ops deep: kernel-split-deep-chain.py N OUT.json [--mixed]
# Plain: x + 1, N times. --mixed: each step adds or subtracts 1 at random (fixed seed), so that the kernels
# a bounded kernel size cuts it into differ; prints the sum of the steps.
import json, random, sys
n = int(sys.argv[1]); out = sys.argv[2]; mixed = "--mixed" in sys.argv[3:]
P = lambda s: {"$": "ParamArg", "slot": s, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"}
nodes = [{"id": 0, "op": "CONST", "dtype": "weakint", "arg": 4},
         {"id": 1, "op": "PARAM", "dtype": "float32", "src": [0], "arg": P(0)},
         {"id": 2, "op": "PARAM", "dtype": "float32", "src": [0], "arg": P(1)},
         {"id": 3, "op": "CONST", "dtype": "float32", "arg": 1.0}]
x = 2
rng = random.Random(14)
total = 0
for i in range(n):
    op = "SUB" if mixed and rng.random() < 0.5 else "ADD"
    total += -1 if op == "SUB" else 1
    nodes.append({"id": len(nodes), "op": op, "dtype": "float32", "src": [x, 3]}); x = len(nodes) - 1
nodes.append({"id": len(nodes), "op": "STORE", "dtype": "void", "src": [1, x]})
nodes.append({"id": len(nodes), "op": "AFTER", "dtype": "float32", "src": [1, len(nodes) - 1]})
nodes.append({"id": len(nodes), "op": "SINK", "dtype": "void", "src": [len(nodes) - 1]})
json.dump({"format": "uopc-graph", "version": 1, "producer": {"name": "hand-written", "version": "1"},
           "semantics": {"pad_fill": "zero"}, "nodes": nodes, "root": len(nodes) - 1}, open(out, "w"))
if mixed: print(total)
