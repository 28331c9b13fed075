"""rename-kernels.py IN.json OUT.json NAME...: a kernel-split graph with its kernels (KernelInfo names, in
node order) renamed to the given names, cycling through them."""
import json, sys

g = json.load(open(sys.argv[1]))
names, k = sys.argv[3:], 0
def walk(a):
    global k
    if isinstance(a, dict):
        if a.get("$") == "KernelInfo" and "name" in a:
            a["name"] = names[k % len(names)]
            k += 1
        for v in a.values(): walk(v)
    elif isinstance(a, list):
        for v in a: walk(v)
for n in g["nodes"]:
    walk(n.get("arg"))
json.dump(g, open(sys.argv[2], "w"))
