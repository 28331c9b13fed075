#!/usr/bin/env python3
"""Outputs bitwise identical for every thread count (issue 12's must-show), on the perf-run cases.

For every case in --data (perf-run's regenerated inputs, see bench/kernels.py) and target: compile with uopc,
run uopc-run with --threads 1 and with each of --threads, and compare the output files byte for byte.
Prints per case the steps split across threads and the result; exits 1 on any difference."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import Case  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--data", required=True, help="perf-run cases with their inputs (perf-run/gen-all.sh)")
    ap.add_argument("--targets", default="c,llvm")
    ap.add_argument("--threads", default="2,3")
    args = ap.parse_args()
    args.targets = args.targets.split(",")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(args.data)):
            d = os.path.join(args.data, name)
            if not os.path.exists(os.path.join(d, "case.json")):
                continue
            case = Case(name, d, tmp, args)
            for target in args.targets:
                subprocess.run([args.uopc, os.path.join(d, "graph.json"), "-o", case.out[target], "--target", target],
                               check=True, capture_output=True)
                with open(os.path.join(case.out[target], "manifest.json")) as f:
                    steps = json.load(f)["steps"]
                split = sum(1 for s in steps if s.get("parallel"))
                runs = {}
                for t in ["1"] + args.threads.split(","):
                    flags, outputs = case.io(os.path.join(tmp, f"t{t}"))
                    os.makedirs(os.path.join(tmp, f"t{t}"), exist_ok=True)
                    subprocess.run([args.uopc_run, os.path.join(case.out[target], "manifest.json"), "--threads", t] + flags,
                                   check=True, capture_output=True)
                    runs[t] = [open(f, "rb").read() for _, files in outputs for f in files]
                same = all(runs[t] == runs["1"] for t in runs)
                bad += not same
                print(f"{'SAME' if same else 'DIFFER'} {name} ({target}): {split} of {len(steps)} steps split, "
                      f"threads {', '.join(runs)}")
    print(f"{bad} case(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
