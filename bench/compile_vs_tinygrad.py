#!/usr/bin/env python3
"""Compile time of uopc against tinygrad's own scheduler + code generator, per corpus case.

For every public and perf case: the best of --reps wall-clock runs of `uopc graph.json -o DIR --target T`
(the whole default pipeline: read, every pass, kernel emission for T, manifest, atomic directory write) against
reference.schedule_s + reference.codegen_s from case.json (tinygrad on this kind of machine). Prints one
row per case with the ratio, then the totals. Figures only: no figure is asserted, but a case that uopc fails to
compile makes the exit status 1 (the benchmark no longer measures what it says).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", default=os.environ.get("UOPC_CORPUS", "../shared/corpus"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--target", default="c", choices=["c", "llvm", "ptx"])
    args = ap.parse_args()
    if not os.path.isdir(args.corpus):
        print(f"(no corpus at {args.corpus}: skipped)")
        return 0
    rows, tot_u, tot_t, failed = [], 0.0, 0.0, 0
    print(f"{'case':32} {'uopc s':>9} {'tinygrad s':>11} {'ratio':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for sset in ("public", "perf"):
            d = os.path.join(args.corpus, sset)
            for case in sorted(os.listdir(d)):
                cj = os.path.join(d, case, "case.json")
                if not os.path.isfile(cj):
                    continue
                ref = json.load(open(cj))["reference"]
                t_ref = ref["schedule_s"] + ref["codegen_s"]
                best = None
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    p = subprocess.run([args.uopc, os.path.join(d, case, "graph.json"), "-o", os.path.join(tmp, "o"),
                                        "--target", args.target],
                                       capture_output=True)
                    dt = time.perf_counter() - t0
                    if p.returncode != 0:
                        best = None
                        failed += 1
                        print(f"{sset + '/' + case:32} failed: {p.stderr.decode().strip()[:80]}")
                        break
                    best = dt if best is None else min(best, dt)
                if best is None:
                    continue
                tot_u += best
                tot_t += t_ref
                print(f"{sset + '/' + case:32} {best:9.4f} {t_ref:11.4f} {t_ref / best:8.0f}x")
    if tot_u > 0:
        print(f"{'total':32} {tot_u:9.4f} {tot_t:11.4f} {tot_t / tot_u:8.0f}x")
    print(f"uopc s: best wall time of a whole `uopc graph.json -o DIR --target {args.target}` process (start-up included)")
    if failed:
        print(f"compile_vs_tinygrad.py: error: {failed} case(s) failed to compile", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
