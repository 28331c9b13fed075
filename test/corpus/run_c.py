#!/usr/bin/env python3
"""End-to-end conformance of a kernel target (C by default, --target llvm or ptx): for every corpus case,
`uopc graph.json -o OUT --target T` (kernels + manifest),
then `uopc-run OUT/manifest.json --input ... --output ... [--var ...]`, and compare the written buffers with
tinygrad's own results (`expected` in case.json), the way run_interpret.py does (floats within the case's
tolerance, NaN equal to NaN, integers and bools exactly).

One line per case (PASS/FAIL with the reason), then a final `N passed, M failed[, K skipped]`. Exits 1 when
the pass rate is below --min-pass-rate. Without a corpus it prints a visible skip line and exits 0. With
--target ptx on a machine without a usable GPU (uopc-run says so on the first case) it prints a SKIP line
and exits 77, which ctest reports as skipped.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import json
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_interpret import check_outputs  # noqa: E402  (the shared comparison with the expected outputs)


NO_GPU = re.compile(r"no NVIDIA driver|no usable GPU|no CUDA device", re.IGNORECASE)


def last_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[-1]


TUNE_LINE = re.compile(r"uopc: tune: kernel \d+/\d+ (\S+): (heuristic|kept) \[([^\]]*)\]")


def tune_note(log: str) -> str:
    """'tuned: S searched, C changed' from uopc --tune's log: kernels searched, and those whose kept opts are
    not the heuristic's (the kernels this case's outputs then check)."""
    heuristic, kept = {}, {}
    for name, what, opts in TUNE_LINE.findall(log):
        (heuristic if what == "heuristic" else kept)[name] = opts
    changed = sum(1 for k, v in kept.items() if heuristic.get(k) != v)
    return f"tuned: {len(kept)} searched, {changed} changed"


def run_case(case_dir: str, args, env) -> tuple:
    """('PASS'|'FAIL'|'SKIP', reason) for one case directory."""
    case_json, graph = os.path.join(case_dir, "case.json"), os.path.join(case_dir, "graph.json")
    if not os.path.isfile(case_json) or not os.path.isfile(graph):
        return "SKIP", "no case.json or graph.json"
    with open(case_json) as f:
        case = json.load(f)
    tol = case.get("tolerance") or {}
    rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
    variables = dict(case.get("vars") or {})
    notes = []
    with tempfile.TemporaryDirectory(prefix=f"uopc-{args.target}-") as tmp:
        out = os.path.join(tmp, "out")
        tune = ["--tune", "--tune-budget", str(args.tune), "--tune-db", os.path.join(tmp, "tune.json")] if args.tune else []
        try:
            proc = subprocess.run([args.uopc, graph, "-o", out, "--target", args.target] + args.uopc_flag + tune, capture_output=True, text=True,
                                  timeout=args.timeout, env=env)
        except subprocess.TimeoutExpired:
            return "FAIL", f"uopc timed out after {args.timeout}s"
        if proc.returncode != 0:
            return "FAIL", f"uopc exit {proc.returncode}: {last_line(proc.stderr)}"
        if args.tune:
            notes.append(tune_note(proc.stderr))
        cmd = [args.uopc_run, os.path.join(out, "manifest.json")]
        outputs = []
        with open(os.path.join(out, "manifest.json")) as f:
            manifest_roles = {q["slot"]: q for q in json.load(f)["params"]}
        for p in case["params"]:
            if p.get("kind") == "var":
                if "value" in p and p.get("name"):
                    variables.setdefault(p["name"], p["value"])
                continue
            slot = p["slot"]
            if p.get("input"):
                cmd += ["--input", f"{slot}=" + ",".join(os.path.join(case_dir, x) for x in p["input"])]
            elif manifest_roles.get(slot, {}).get("role") == "inout":
                # uopc could not prove that its kernels write every element (a conservative role): the
                # buffer starts as a fresh one would, zeroed; the comparison below still checks every byte.
                q = manifest_roles[slot]
                zeros = []
                for d in range(len(q["devices"])):
                    zeros.append(os.path.join(tmp, f"slot{slot}.dev{d}.zero.bin"))
                    with open(zeros[-1], "wb") as f:
                        f.write(bytes(q["bytes"]))
                cmd += ["--input", f"{slot}=" + ",".join(zeros)]
                notes.append(f"slot {slot} is inout in the manifest, output in case.json")
            if p.get("expected"):
                files = [os.path.join(tmp, f"slot{slot}.dev{d}.bin") for d in range(len(p["expected"]))]
                cmd += ["--output", f"{slot}=" + ",".join(files)]
                outputs.append((p, files))
        for name, value in sorted(variables.items()):
            cmd += ["--var", f"{name}={value}"]
        if not outputs:
            return "SKIP", "the case expects no output"
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
        except subprocess.TimeoutExpired:
            return "FAIL", f"uopc-run timed out after {args.timeout}s"
        if proc.returncode != 0:
            return "FAIL", f"uopc-run exit {proc.returncode}: {last_line(proc.stderr)}"
        why, skipped = check_outputs(case_dir, case, outputs, rtol, atol)
        notes += skipped
        if why:
            return "FAIL", why
    return "PASS", "; ".join(notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True, help="the uopc binary")
    ap.add_argument("--uopc-run", required=True, help="the uopc-run binary")
    ap.add_argument("--corpus", default=os.environ.get("UOPC_CORPUS", ""), help="corpus directory (default $UOPC_CORPUS)")
    ap.add_argument("--target", default="c", choices=["c", "llvm", "ptx"], help="kernel target (default c)")
    ap.add_argument("--uopc-flag", action="append", default=[],
                    help="an extra uopc flag (repeatable), e.g. --uopc-flag=--grid-on-host")
    ap.add_argument("--perf", action="store_true", help="also run the perf set")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--cache-dir", default="", help="XDG_CACHE_HOME for uopc-run's compiled kernels (default: inherited)")
    ap.add_argument("--min-pass-rate", type=float, default=0.95, help="fail below this pass rate (default 0.95)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per command (default 600)")
    ap.add_argument("--tune", type=float, default=0,
                    help="compile with uopc --tune and this --tune-budget (seconds a case, a fresh database each): the tuned kernels against tinygrad")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run in parallel")
    args = ap.parse_args()

    if not args.corpus or not os.path.isdir(args.corpus):
        print(f"SKIP corpus-{args.target}: no corpus at '{args.corpus}' (set UOPC_CORPUS or put it at ../shared/corpus)")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    env = dict(os.environ)
    if args.cache_dir:
        env["XDG_CACHE_HOME"] = args.cache_dir
    sets = ["public"] + (["perf"] if args.perf else [])
    cases = []
    for s in sets:
        root = os.path.join(args.corpus, s)
        if os.path.isdir(root):
            cases += [(f"{s}/{name}", os.path.join(root, name)) for name in sorted(os.listdir(root))
                      if os.path.isdir(os.path.join(root, name)) and args.filter in name]
    if args.target == "ptx" and cases:
        # The first case tells whether this machine can run PTX at all.
        first = run_case(cases[0][1], args, env)
        if first[0] == "FAIL" and NO_GPU.search(first[1]):
            print(f"SKIP corpus-ptx: {first[1]}")
            return 77
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: run_case(c[1], args, env), cases))
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for (name, _), (status, why) in zip(cases, results):
        counts[status] += 1
        print(f"{status} {name}" + (f": {why}" if why else ""))
    line = f"{counts['PASS']} passed, {counts['FAIL']} failed"
    if args.tune:
        found = [tuple(map(int, m)) for _, (_, why) in zip(cases, results) for m in re.findall(r"tuned: (\d+) searched, (\d+) changed", why)]
        print(f"tune: {sum(a for a, _ in found)} kernels searched in {len(found)} cases, "
              f"{sum(b for _, b in found)} of them kept opts other than the heuristic's")
    if counts["SKIP"]:
        line += f", {counts['SKIP']} skipped"
    print(line)
    ran = counts["PASS"] + counts["FAIL"]
    if ran == 0:
        print(f"error: no case ran from {args.corpus}", file=sys.stderr)
        return 1
    rate = counts["PASS"] / ran
    if rate < args.min_pass_rate:
        print(f"error: pass rate {rate:.1%} is below {args.min_pass_rate:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
