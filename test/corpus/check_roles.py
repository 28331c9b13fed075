#!/usr/bin/env python3
"""Outputs are outputs: for every case of the corpora given, the role uopc's manifest gives each buffer slot
must be the role tinygrad's case.json gives it. uopc may only say `inout` (the kernels might leave some
elements unwritten, or read the buffer first) where tinygrad says so too; a slot tinygrad only writes must be
an `output`, so uopc-run needs no input file for it.

One line per mismatch, then `N cases checked, M mismatches`. Exits 1 on any mismatch or when no case ran;
a missing corpus directory is reported and skipped (exit 0) so long as another one ran.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("corpora", nargs="+", help="corpus directories (public/ and perf/ under each)")
    args = ap.parse_args()
    checked, bad = 0, 0
    for corpus in args.corpora:
        if not os.path.isdir(corpus):
            print(f"SKIP {corpus}: no such directory")
            continue
        for s in ("public", "perf"):
            root = os.path.join(corpus, s)
            if not os.path.isdir(root):
                continue
            for c in sorted(os.listdir(root)):
                d = os.path.join(root, c)
                if not os.path.isfile(os.path.join(d, "case.json")):
                    continue
                with tempfile.TemporaryDirectory(prefix="uopc-roles-") as t:
                    r = subprocess.run([args.uopc, os.path.join(d, "graph.json"), "-o", os.path.join(t, "o"),
                                        "--emit", "manifest"], capture_output=True, text=True)
                    if r.returncode:
                        print(f"FAIL {corpus}/{s}/{c}: uopc exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
                        bad += 1
                        continue
                    with open(os.path.join(t, "o", "manifest.json")) as f:
                        manifest = json.load(f)
                with open(os.path.join(d, "case.json")) as f:
                    case = json.load(f)
                checked += 1
                want = {p["slot"]: p.get("role") for p in case["params"] if p.get("kind") != "var"}
                for q in manifest["params"]:
                    if q["role"] != want.get(q["slot"]):
                        print(f"FAIL {corpus}/{s}/{c}: slot {q['slot']} is {q['role']} in the manifest, "
                              f"{want.get(q['slot'])} in case.json")
                        bad += 1
    print(f"{checked} cases checked, {bad} mismatches")
    if checked == 0:
        print("error: no case ran", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
