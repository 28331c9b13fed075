#!/usr/bin/env python3
"""Compiles every corpus and perf-run case with two builds of uopc and diffs what they write.

  scripts/compare_outputs.py --old OLD/uopc --new build/uopc [--only c,llvm] [--jobs 2]

For a refactoring that must not change the output: each case is compiled by both binaries under every
configuration below (C, LLVM, PTX, the host grid, --emit library/manifest/graph, --viz), and the output
directories (every file's bytes), the exit codes and stderr are compared. Each binary finds its LLVM plugin
beside itself (copy libuopc-llvm.so along with the old uopc). Prints one line per difference and a summary;
exits 1 when anything differs. Wall times of both binaries are summed per configuration (a rough compile-time
comparison; run it on a quiet machine for figures).
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

CONFIGS = {
    "c": ["--target", "c"],
    "llvm": ["--target", "llvm"],
    "ptx": ["--target", "ptx"],
    "grid": ["--target", "llvm", "--grid-on-host"],
    "c-O0": ["--target", "c", "--opt-level", "0"],
    "c-cpu": ["--target", "c", "--cpu", "x86-64-v3"],
    "library": ["--target", "c", "--emit", "library", "--name", "lib"],
    "manifest-llvm": ["--target", "llvm", "--emit", "manifest"],
    "graph": ["--emit", "graph"],
    "viz-c": ["--target", "c", "--viz", "{tmp}/page.html"],
    "viz-ptx": ["--target", "ptx", "--viz", "{tmp}/page.html"],
    "viz-manifest": ["--target", "llvm", "--emit", "manifest", "--viz", "{tmp}/page.html"],
    "ptx-tail": ["--target", "ptx", "--pass-pipeline",
                 "verify,simplify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split,schedule,codegen"],
}


def cases():
    roots = [SHARED / "corpus" / "public", SHARED / "corpus" / "perf", SHARED / "corpus-0.14" / "public",
             SHARED / "corpus-0.14" / "perf", SHARED / "perf-run" / "cases"]
    out = []
    for r in roots:
        if r.is_dir():
            out += [p for p in sorted(r.iterdir()) if (p / "graph.json").is_file()]
    return out


def run(uopc, case, config, tmp):
    args = [a.replace("{tmp}", tmp) for a in CONFIGS[config]]
    t0 = time.perf_counter()
    p = subprocess.run([uopc, str(case / "graph.json"), "-o", os.path.join(tmp, "out")] + args,
                       capture_output=True, text=True, timeout=900)
    return p.returncode, p.stderr.replace(tmp, "TMP"), time.perf_counter() - t0


def tree(d):
    return sorted(str(p.relative_to(d)) for p in Path(d).rglob("*") if p.is_file()) if os.path.isdir(d) else []


def compare(job):
    old, new, case, config = job
    with tempfile.TemporaryDirectory(prefix="uopc-cmp-") as a, tempfile.TemporaryDirectory(prefix="uopc-cmp-") as b:
        ra = run(old, case, config, a)
        rb = run(new, case, config, b)
        diffs = []
        if ra[0] != rb[0]:
            diffs.append(f"exit {ra[0]} -> {rb[0]}: {(rb[1] or ra[1]).strip().splitlines()[-1:]}")
        elif ra[1] != rb[1]:
            diffs.append("stderr differs: " + repr(ra[1][-200:]) + " -> " + repr(rb[1][-200:]))
        for sub in ["out", "page.html"]:
            pa, pb = os.path.join(a, sub), os.path.join(b, sub)
            if os.path.isfile(pa) or os.path.isfile(pb):
                if not (os.path.isfile(pa) and os.path.isfile(pb) and filecmp.cmp(pa, pb, shallow=False)):
                    diffs.append(f"{sub} differs")
                continue
            ta, tb = tree(pa), tree(pb)
            if ta != tb:
                diffs.append(f"files differ: only old {sorted(set(ta) - set(tb))[:5]}, only new {sorted(set(tb) - set(ta))[:5]}")
            for f in sorted(set(ta) & set(tb)):
                if not filecmp.cmp(os.path.join(pa, f), os.path.join(pb, f), shallow=False):
                    diffs.append(f"{f} differs")
        return case, config, diffs, ra[2], rb[2], ra[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default=str(REPO / "build" / "uopc"))
    ap.add_argument("--only", default=",".join(CONFIGS), help="comma-separated configurations: " + ", ".join(CONFIGS))
    ap.add_argument("--case", action="append", default=[], help="only cases whose name contains this (repeatable)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    configs = [c for c in a.only.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"unknown configuration {c}")
    cs = [c for c in cases() if not a.case or any(s in c.name for s in a.case)]
    jobs = [(a.old, a.new, c, cfg) for cfg in configs for c in cs]
    bad = 0
    times = {c: [0.0, 0.0, 0] for c in configs}
    with ThreadPoolExecutor(a.jobs) as ex:
        for case, config, diffs, told, tnew, rc in ex.map(compare, jobs):
            times[config][0] += told
            times[config][1] += tnew
            times[config][2] += rc != 0
            for d in diffs:
                bad += 1
                print(f"DIFF {config} {case.parent.parent.name}/{case.parent.name}/{case.name}: {d}", flush=True)
    for c, (to, tn, failed) in times.items():
        print(f"{c:14s} old {to:8.2f} s  new {tn:8.2f} s  ({failed} cases exit non-zero under old)")
    print(f"{len(jobs)} compiles compared, {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
