#!/usr/bin/env python3
"""Rangeify scaling figures (not a test): generated elementwise chains of N ALU ops, rangeify's time per size.

Each chain is perf_chain-style blocks `t = x*k; x' = max(t*1.0001 + p, t + c)` over a 256-element float32
PARAM: every `t` and every `x` is read twice, so each is a stage candidate that stage removal must inline
(the result is one kernel). Runs `uopc --time-passes` up to kernel-split (best of --repeat runs: timings are noisy on a loaded machine) and prints
the rangeify time, the whole pipeline's time and the kernel count. Usage:
  bench/rangeify_scaling.py [--uopc build/uopc] [--sizes 512,2048,8192] [--repeat 3]
"""
import argparse, json, os, re, subprocess, tempfile

PIPELINE = "verify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split"

def chain(nops):
    nodes = []
    def add(op, dtype, src=None, arg=None):
        n = {"id": len(nodes), "op": op, "dtype": dtype}
        if src is not None: n["src"] = src
        if arg is not None: n["arg"] = arg
        nodes.append(n)
        return n["id"]
    def param(slot, size):
        return add("PARAM", "float32", [size], {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"},
                                                  "device": "CPU"})
    size = add("CONST", "weakint", arg=256)
    out, x, p = param(0, size), param(1, size), param(2, size)
    k, k2, c = add("CONST", "float32", arg=0.999), add("CONST", "float32", arg=1.0001), add("CONST", "float32", arg=-0.5)
    ops = 0
    while ops + 5 <= nops:
        t = add("MUL", "float32", [x, k])
        a = add("ADD", "float32", [add("MUL", "float32", [t, k2]), p])
        b = add("ADD", "float32", [t, c])
        x = add("MAX", "float32", [a, b])
        ops += 5
    st = add("STORE", "void", [out, x])
    root = add("SINK", "void", [add("AFTER", "float32", [out, st])])
    return {"format": "uopc-graph", "version": 1, "semantics": {"pad_fill": "zero"}, "root": root, "nodes": nodes}, ops

def run(uopc, graph, d):
    r = subprocess.run([uopc, graph, "-o", os.path.join(d, "out"), "--emit", "graph", "--pass-pipeline", PIPELINE,
                        "--time-passes", "--print-after=kernel-split", "--print-ir-format=json"], capture_output=True, text=True, check=True)
    text = r.stdout + r.stderr
    def secs(name):
        m = re.search(r"([0-9.]+) s\s+[0-9.]+%\s+" + name + r"\s*$", text, re.M)
        return float(m.group(1)) if m else float("nan")
    kernels = len(re.findall(r"\"\$\": ?\"KernelInfo\"", text))
    return secs("rangeify"), secs("total"), kernels

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uopc", default="build/uopc")
    ap.add_argument("--sizes", default="512,2048,8192")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    print("| ALU ops | nodes | rangeify ms | pipeline ms | kernels |\n|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        for n in [int(s) for s in a.sizes.split(",")]:
            g, ops = chain(n)
            path = os.path.join(d, f"chain_{n}.json")
            with open(path, "w") as f: json.dump(g, f)
            best = min((run(a.uopc, path, d) for _ in range(a.repeat)), key=lambda r: r[0])
            print(f"| {ops} | {len(g['nodes'])} | {best[0] * 1e3:.2f} | {best[1] * 1e3:.2f} | {best[2]} |")

if __name__ == "__main__":
    main()
