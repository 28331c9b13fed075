#!/usr/bin/env python3
"""uopc --tune against the default compile, per perf-run case (../shared/perf-run/cases): the seconds the search
took, then uopc-run's best time of the default and of the tuned kernels, alternating rounds on the same seeded
inputs (floats in [0.5, 1.5), integers in [0, 8)), how many kernels the search gave other opts than the
default's (none: the same code, the ratio is the machine's noise), and whether the tuned outputs match the
default's (float32 within 1e-4 of the element plus the largest). Figures are printed, never asserted.
  bench/tune.py [--uopc build/uopc] [--uopc-run build/uopc-run] [--target llvm] [--budget 20] [--cases a,b]
                [--rounds 2] [--bench 20] [--work DIR] [--quick]
--quick: one small case, a 1-second budget, one round of 2 runs (bench-quick: that it works)."""
import argparse
import array
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "..", "..", "shared", "perf-run", "cases")
FLOATS = {"float32": "f", "float64": "d"}
INTS = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q"}


def inputs(manifest, work):
    """Seeded input files for every input (and inout) parameter of a manifest: --input arguments."""
    r = random.Random(11)
    args = []
    for p in manifest["params"]:
        if p["role"] == "output":
            continue
        dt, n = p["dtype"], p["numel"]
        if dt in FLOATS:
            pattern = array.array(FLOATS[dt], [r.uniform(0.5, 1.5) for _ in range(4099)])
        elif dt in INTS:
            pattern = array.array(INTS[dt], [r.randrange(8) for _ in range(4099)])
        elif dt == "bool":
            pattern = array.array("B", [r.randrange(2) for _ in range(4099)])
        else:  # (16-bit floats and the rest: zeros, whatever they are)
            pattern = array.array("B", bytes(4099 * max(1, p["bytes"] // max(1, n))))
        data = (pattern * (n // 4099 + 1))[:n] if dt in FLOATS or dt in INTS or dt == "bool" else None
        path = os.path.join(work, f"in{p['slot']}.bin")
        with open(path, "wb") as f:
            f.write(data.tobytes() if data is not None else bytes(p["bytes"]))
        args += ["--input", f"{p['slot']}={path}"]
    return args


def outputs(manifest, work, tag):
    args = []
    for p in manifest["params"]:
        if p["role"] != "input":
            args += ["--output", "%d=%s" % (p["slot"], os.path.join(work, "%s%d.bin" % (tag, p["slot"])))]
    return args


def run(uopc_run, out, ins, outs, n):
    """uopc-run --bench n: the best total time in ms."""
    text = subprocess.run([uopc_run, os.path.join(out, "manifest.json"), *ins, *outs, "--bench", str(n)],
                          check=True, capture_output=True, text=True).stdout
    m = re.search(r"total: mean [0-9.]+ us, min ([0-9.]+) us", text)
    return float(m.group(1)) / 1000 if m else float("nan")


def close(a, b, dtype):
    if dtype != "float32":
        return a == b
    x, y = array.array("f", a), array.array("f", b)
    if len(x) != len(y):
        return False
    scale = max((abs(v) for v in x), default=0.0)
    return all(abs(u - v) <= 1e-4 * (abs(u) + scale) for u, v in zip(x, y))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uopc", default=os.path.join(HERE, "..", "build", "uopc"))
    ap.add_argument("--uopc-run", default=os.path.join(HERE, "..", "build", "uopc-run"))
    ap.add_argument("--target", default="llvm", choices=["c", "llvm"])
    ap.add_argument("--budget", type=float, default=20)
    ap.add_argument("--cases", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bench", type=int, default=20)
    ap.add_argument("--work", default="")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.cases, a.budget, a.rounds, a.bench = a.cases or "sp_mm_512", 1, 1, 2
    if not os.path.isdir(CASES):
        print(f"skipped: no perf-run cases at {CASES}")
        return 0
    names = a.cases.split(",") if a.cases else sorted(os.listdir(CASES))
    work = a.work or tempfile.mkdtemp(prefix="uopc-tune-bench-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))  # (the C kernels' cache, not the user's)
    print(f"target {a.target}, budget {a.budget:g} s per case, {a.rounds} rounds of uopc-run --bench {a.bench} (best ms)")
    print(f"{'case':28} {'tune s':>7} {'searched':>8} {'changed':>7} {'default ms':>11} {'tuned ms':>9} {'speedup':>8}  outputs")
    for name in names:
        graph = os.path.join(CASES, name, "graph.json")
        d = os.path.join(work, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        base = [a.uopc, graph, "--target", a.target, "--force"]
        subprocess.run(base + ["-o", os.path.join(d, "default")], check=True, env=env)
        t0 = time.monotonic()
        log = subprocess.run(base + ["-o", os.path.join(d, "tuned"), "--tune", "--tune-budget", str(a.budget),
                                     "--tune-db", os.path.join(d, "db.json")], check=True, env=env,
                             capture_output=True, text=True).stderr
        took = time.monotonic() - t0
        searched = re.search(r"(\d+) searched", log)
        with open(os.path.join(d, "default", "manifest.json")) as f:
            manifest = json.load(f)
        with open(os.path.join(d, "tuned", "manifest.json")) as f:
            tuned = json.load(f)
        # the kernels whose opts the search changed: with none, the two builds run the same code and their
        # ratio is the machine's noise
        opts = {tag: {s["kernel"]: s.get("opts") for s in m["steps"] if s.get("kind") == "kernel"}
                for tag, m in (("default", manifest), ("tuned", tuned))}
        changed = sum(1 for k, o in opts["tuned"].items() if opts["default"].get(k) != o)
        ins = inputs(manifest, d)
        best = {"default": float("inf"), "tuned": float("inf")}
        for _ in range(a.rounds):
            for tag in best:
                best[tag] = min(best[tag], run(a.uopc_run, os.path.join(d, tag), ins, outputs(manifest, d, tag), a.bench))
        same = all(close(open(os.path.join(d, f"default{p['slot']}.bin"), "rb").read(),
                         open(os.path.join(d, f"tuned{p['slot']}.bin"), "rb").read(), p["dtype"])
                   for p in manifest["params"] if p["role"] != "input")
        print(f"{name:28} {took:7.1f} {searched.group(1) if searched else '0':>8} {changed:7d} {best['default']:11.3f} "
              f"{best['tuned']:9.3f} {best['default'] / best['tuned']:7.2f}x  {'match' if same else 'DIFFER'}", flush=True)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
