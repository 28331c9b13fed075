#!/usr/bin/env python3
"""Kernel counts of uopc's kernel split next to tinygrad's (case.json reference.kernels), per corpus case.

Runs `uopc GRAPH --emit graph --pass-pipeline P --print-after=kernel-split --print-ir-format=json` on every case and counts the
kernel SINKs (a SINK whose arg is a KernelInfo). Prints a markdown table and the totals; with --check,
fails when the total or any one case exceeds tinygrad's kernel count.
"""
import argparse, json, os, subprocess, sys, tempfile

PIPELINE = "verify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split"

def count(uopc, graph, pipeline):
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([uopc, graph, "-o", os.path.join(d, "out"), "--emit", "graph", "--pass-pipeline", pipeline,
                            "--print-after=kernel-split", "--print-ir-format=json"], capture_output=True, text=True)
    if r.returncode != 0: return None, r.stderr.strip().splitlines()[-1] if r.stderr else "failed"
    doc = json.loads(r.stdout[r.stdout.index("{"):])
    return sum(1 for n in doc["nodes"] if n["op"] == "SINK" and isinstance(n.get("arg"), dict)
               and n["arg"].get("$") == "KernelInfo"), None

def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--set", default="public")
    ap.add_argument("--pipeline", default=PIPELINE)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    root = os.path.join(a.corpus, a.set)
    if not os.path.isdir(root):
        print(f"SKIP kernel-counts: no corpus at '{root}'")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    ours = ref = 0
    bad = []
    print("| case | uopc | tinygrad |\n|---|---:|---:|")
    for case in sorted(os.listdir(root)):
        cj = os.path.join(root, case, "case.json")
        if not os.path.exists(cj): continue
        want = json.load(open(cj))["reference"]["kernels"]
        got, err = count(a.uopc, os.path.join(root, case, "graph.json"), a.pipeline)
        if got is None:
            bad.append(f"{case}: {err}")
            print(f"| {case} | error | {want} |")
            continue
        ours += got; ref += want
        mark = " (+%d)" % (got - want) if got > want else ""
        if got > want: bad.append(f"{case}: {got} kernels, tinygrad {want}")
        print(f"| {case} | {got}{mark} | {want} |")
    print(f"| **total** | **{ours}** | **{ref}** |")
    if ours > ref: bad.append(f"total {ours} exceeds tinygrad's {ref}")
    for b in bad: print("FAIL", b, file=sys.stderr)
    return 1 if a.check and bad else 0

if __name__ == "__main__":
    sys.exit(main())
