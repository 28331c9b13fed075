"""Prints the LINEAR items of every kernel in a graph document, one per line, behind one ". " per open loop or IF:
the order a target renders them in (test/lit/passes/linearize.test)."""
import json
import sys

doc = json.load(open(sys.argv[1]))
nodes = {n["id"]: n for n in doc["nodes"]}


def label(i):
    n = nodes[i]
    op = n["op"]
    if op == "RANGE":
        axis = n["arg"][1].get("v") if isinstance(n["arg"][1], dict) else n["arg"][1]
        return "RANGE r%s %s%s" % (n["arg"][0], size(n["src"][0]), " " + axis if axis in ("UPCAST", "UNROLL") else "")
    if op == "END":
        return "END r%s" % nodes[n["src"][0]]["arg"][0]
    if op == "SPECIAL":
        return "SPECIAL %s %s" % (n["arg"], size(n["src"][0]))
    if op == "STORE" and nodes[n["src"][0]]["op"] == "REDUCE":
        return "STORE acc(%s) %s" % (nodes[n["src"][0]]["arg"][0]["v"], nodes[n["src"][1]]["op"])
    if op == "STORE":
        return "STORE slot %s" % nodes[nodes[n["src"][0]]["src"][0]]["arg"]["slot"]
    if op == "REDUCE":
        return "REDUCE %s" % n["arg"][0]["v"]
    if op == "INDEX":
        return "INDEX slot %s, %d gates" % (nodes[n["src"][0]]["arg"].get("slot"), len(n["src"]) - 2)
    return op


def size(i):
    n = nodes[i]
    return str(n["arg"]) if n["op"] == "CONST" else n["op"]


for n in doc["nodes"]:
    if n["op"] != "LINEAR":
        continue
    print("LINEAR")
    depth = 1
    for i in n["src"][1:]:
        op = nodes[i]["op"]
        if op in ("END", "ENDIF"):
            depth -= 1
        print(". " * depth + label(i))
        if op in ("RANGE", "IF"):
            depth += 1
