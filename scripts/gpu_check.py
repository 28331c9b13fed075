#!/usr/bin/env python3
"""Runs a GPU bundle (scripts/gpu-bundle.sh) on this machine's GPUs: every case's PTX manifest through the
bundled uopc-run (CUDA driver API), outputs compared with tinygrad's expected results the way the corpus
drivers compare them (test/corpus/run_interpret.py), then --bench N for per-kernel times.

Prints one line per case (PASS/FAIL and why), the pass count, and per case the kernel steps' mean times.
A case compiled with blocks (gpu-map's GROUP_REDUCE/LOCAL) also runs as compiled with gpu-map{blocks=0}
(out-blocks0), checked the same way. Then the bundle's timing cases (perf-run graphs at full size, inputs
filled here with small float values): per-kernel times with blocks and with blocks=0, alternating.
Exit 0 when every case passes, 1 otherwise; 77 when there is no usable GPU (uopc-run says so).
"""
import argparse
import array
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "corpus"))
from run_interpret import compare  # noqa: E402

NO_GPU = re.compile(r"no NVIDIA driver|no usable GPU|no CUDA device", re.IGNORECASE)


def run_case(case_dir, bindir, bench, env, variant="out"):
    case = json.load(open(os.path.join(case_dir, "case.json")))
    tol = case.get("tolerance") or {}
    rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
    out = os.path.join(case_dir, variant)
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    roles = {p["slot"]: p for p in manifest["params"]}
    cmd = [os.path.join(bindir, "uopc-run"), os.path.join(out, "manifest.json")]
    outputs = []
    for p in case["params"]:
        slot = p["slot"]
        if p.get("input"):
            cmd += ["--input", f"{slot}=" + ",".join(os.path.join(case_dir, f) for f in p["input"])]
        elif slot in roles and roles[slot]["role"] == "inout":
            zeros = []
            for d in range(len(roles[slot]["devices"])):
                zeros.append(os.path.join(out, f"zero{slot}.{d}.bin"))
                open(zeros[-1], "wb").write(bytes(roles[slot]["bytes"]))
            cmd += ["--input", f"{slot}=" + ",".join(zeros)]
        if p.get("expected"):
            files = [os.path.join(out, f"got{slot}.{d}.bin") for d in range(len(p["expected"]))]
            cmd += ["--output", f"{slot}=" + ",".join(files)]
            outputs.append((p, files))
    for name, value in sorted((case.get("vars") or {}).items()):
        cmd += ["--var", f"{name}={value}"]
    r = subprocess.run(cmd + (["--bench", str(bench)] if bench else []), capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return "FAIL", (r.stderr.strip().splitlines() or ["(no message)"])[-1], ""
    for p, files in outputs:
        for d, (mine, want) in enumerate(zip(files, p["expected"])):
            why = compare(open(mine, "rb").read(), open(os.path.join(case_dir, want), "rb").read(), p["dtype"], rtol, atol)
            if why:
                return "FAIL", f"slot {p['slot']} device {d}: {why}", r.stdout
    return "PASS", "", r.stdout


def time_case(case_dir, bindir, bench, env):
    """Per-kernel times of a timing case with blocks and with blocks=0, alternating, on filled inputs."""
    pattern = array.array("f", [((i * 7) % 13 - 6) / 8.0 for i in range(4096)]).tobytes()
    lines = []
    for rnd in range(2):
        for variant in ("blocks", "blocks0"):
            out = os.path.join(case_dir, variant)
            manifest = json.load(open(os.path.join(out, "manifest.json")))
            cmd = [os.path.join(bindir, "uopc-run"), os.path.join(out, "manifest.json"), "--bench", str(bench)]
            for p in manifest["params"]:
                if p["role"] == "output":
                    continue
                path = os.path.join(out, f"in{p['slot']}.bin")
                if not os.path.exists(path):
                    n = p["bytes"]
                    open(path, "wb").write((pattern * (n // len(pattern) + 1))[:n])
                cmd += ["--input", f"{p['slot']}={path}"]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            text = r.stdout.rstrip() if r.returncode == 0 else "FAIL: " + ((r.stderr.strip().splitlines() or ["?"])[-1])
            lines.append(f"-- {variant} (round {rnd + 1})\n{text}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("--bench", type=int, default=20, help="runs for per-kernel times (0: none)")
    args = ap.parse_args()
    bindir = os.path.abspath(os.path.join(args.bundle, "bin"))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bindir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cases = []
    for s in ("public", "perf"):
        root = os.path.join(args.bundle, "cases", s)
        if os.path.isdir(root):
            cases += [(f"{s}/{n}", os.path.join(root, n)) for n in sorted(os.listdir(root))]
    passed = 0
    times = []
    runs = []
    for name, d in cases:
        runs.append((name, d, "out"))
        if os.path.isdir(os.path.join(d, "out-blocks0")):
            runs.append((name + " (blocks=0)", d, "out-blocks0"))
    for i, (name, d, variant) in enumerate(runs):
        status, why, bench = run_case(d, bindir, args.bench, env, variant)
        if i == 0 and status == "FAIL" and NO_GPU.search(why):
            print(f"SKIP: {why}")
            return 77
        passed += status == "PASS"
        print(f"{status} {name}" + (f": {why}" if why else ""), flush=True)
        if bench:
            times.append((name, bench))
    print(f"{passed} passed, {len(runs) - passed} failed of {len(runs)}")
    for name, bench in times:
        print(f"== {name}")
        print(bench.rstrip())
    timing = os.path.join(args.bundle, "timing")
    if args.bench and os.path.isdir(timing):
        for name in sorted(os.listdir(timing)):
            print(f"== timing {name}: blocks against blocks=0")
            print(time_case(os.path.join(timing, name), bindir, args.bench, env), flush=True)
    return 0 if passed == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
