#!/usr/bin/env python3
"""Conformance of the reference interpreter: runs `uopc-run --interpret` on every corpus case and compares
the written buffers with tinygrad's own results (`expected` in case.json).

Floats match when |a-b| <= atol + rtol*|b| with the case's tolerance (NaN equals NaN, an infinity equals
the infinity of the same sign); integers and bools must match exactly. One line per case, then a final
`N passed, M failed[, K skipped]`. Exits 1 when the pass rate is below --min-pass-rate.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from impl_defined import skipped_elements, blank  # noqa: E402  (elements whose value is implementation-defined)

# dtype -> struct format of one element (bfloat16 is decoded by hand).
FORMATS = {
    "float64": "d", "float32": "f", "float16": "e",
    "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
    "int64": "q", "uint64": "Q", "bool": "?",
}
FLOATS = {"float64", "float32", "float16", "bfloat16"}


def decode(data: bytes, dtype: str):
    """The elements of a raw little-endian buffer, or None for a dtype compared byte by byte."""
    if dtype == "bfloat16":
        if len(data) % 2:
            raise ValueError(f"{len(data)} bytes is not a whole number of bfloat16 elements")
        halves = struct.unpack(f"<{len(data) // 2}H", data)
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]
    fmt = FORMATS.get(dtype)
    if fmt is None:
        return None
    size = struct.calcsize(fmt)
    if len(data) % size:
        raise ValueError(f"{len(data)} bytes is not a whole number of {dtype} elements")
    return list(struct.unpack(f"<{len(data) // size}{fmt}", data))


def float_close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def compare(got: bytes, want: bytes, dtype: str, rtol: float, atol: float):
    """None when the buffers match, else a one-line reason."""
    if len(got) != len(want):
        return f"{len(got)} bytes written, {len(want)} expected"
    g, w = decode(got, dtype), decode(want, dtype)
    if g is None:
        if got == want:
            return None
        first = next(i for i in range(len(got)) if got[i] != want[i])
        return f"bytes differ ({dtype} compared exactly), first at byte {first}"
    if dtype in FLOATS:
        bad = [i for i in range(len(w)) if not float_close(g[i], w[i], rtol, atol)]
        if not bad:
            return None
        finite = [abs(g[i] - w[i]) for i in bad if math.isfinite(g[i]) and math.isfinite(w[i])]
        maxerr = f", max abs error {max(finite):.3g}" if finite else ""
        i = bad[0]
        return f"{len(bad)}/{len(w)} elements off{maxerr}; first at [{i}]: got {g[i]!r}, expected {w[i]!r}"
    bad = [i for i in range(len(w)) if g[i] != w[i]]
    if not bad:
        return None
    i = bad[0]
    return f"{len(bad)}/{len(w)} elements differ; first at [{i}]: got {g[i]!r}, expected {w[i]!r}"



def check_outputs(case_dir: str, case: dict, outputs, rtol: float, atol: float):
    """Compares the files a run wrote with the case's expected outputs: `outputs` pairs each output param with
    its files, one per device. Elements whose value is implementation-defined (impl_defined.py) are blanked
    on both sides first. Returns (the first mismatch as a message, or "", notes on what was skipped)."""
    skips, notes = skipped_elements(case_dir, case), []
    for p, files in outputs:
        for d, (mine, want) in enumerate(zip(files, p["expected"])):
            with open(mine, "rb") as f:
                got = f.read()
            with open(os.path.join(case_dir, want), "rb") as f:
                expected = f.read()
            if p["slot"] in skips and len(got) == len(expected):
                indices, reason = skips[p["slot"]]
                numel = p["numel"][d] if isinstance(p["numel"], list) else p["numel"]
                got = blank(got, expected, len(expected) // max(1, int(numel)), indices)
                notes.append(f"slot {p['slot']}: skipped elements {indices}: {reason}")
            try:
                why = compare(got, expected, p["dtype"], rtol, atol)
            except ValueError as e:
                why = str(e)
            if why:
                return f"slot {p['slot']} device {d} ({p['dtype']}): {why}", notes
    return "", notes

def graph_slots(graph: str) -> dict:
    """slot -> (dtype, numel per device, device count) of the graph's buffer PARAMs."""
    with open(graph) as f:
        g = json.load(f)
    nodes, slots = g["nodes"], {}
    for n in nodes:
        a = n.get("arg")
        if n["op"] != "PARAM" or not isinstance(a, dict) or a.get("slot", -1) < 0 or not n.get("src"):
            continue
        size = nodes[n["src"][0]]
        dims = [size] if size["op"] == "CONST" else [nodes[i] for i in size.get("src", [])]
        if size["op"] not in ("CONST", "STACK") or not all(d["op"] == "CONST" and isinstance(d.get("arg"), int)
                                                          for d in dims):
            continue
        numel = 1
        for d in dims:
            numel *= d["arg"]
        dev = a.get("device")
        slots[a["slot"]] = (a["dtype"]["v"], numel, len(dev) if isinstance(dev, list) else 1)
    return slots


def run_differential(graph: str, slots: dict, args) -> tuple:
    """A stage graph the case's data does not fit (an allreduce function): run it on synthetic inputs
    with --pass-pipeline verify and with args.pipeline, and compare every slot."""
    import random
    rnd = random.Random(1234)
    with tempfile.TemporaryDirectory(prefix="uopc-diff-") as tmp:
        ins, outs = [], {}
        for slot, (dtype, numel, ndev) in sorted(slots.items()):
            files = []
            for d in range(ndev):
                fmt = FORMATS.get(dtype)
                if fmt is None:
                    return "SKIP", f"differential mode: no generator for {dtype}"
                vals = [rnd.uniform(-4, 4) if dtype in FLOATS else rnd.randint(0, 1 if fmt == "?" else 100)
                        for _ in range(numel)]
                path = os.path.join(tmp, f"in{slot}.{d}.bin")
                with open(path, "wb") as f:
                    f.write(struct.pack(f"<{numel}{fmt}", *[bool(v) if fmt == "?" else v for v in vals]))
                files.append(path)
            ins += ["--input", f"{slot}=" + ",".join(files)]
        results = {}
        for tag, pipeline in (("ref", "verify"), ("got", args.pipeline)):
            cmd = [args.uopc_run, "--interpret", graph, "--pass-pipeline", pipeline] + ins
            for slot, (dtype, numel, ndev) in sorted(slots.items()):
                files = [os.path.join(tmp, f"{tag}{slot}.{d}.bin") for d in range(ndev)]
                cmd += ["--output", f"{slot}=" + ",".join(files)]
                outs.setdefault(tag, {})[slot] = files
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            if proc.returncode != 0:
                msg = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
                return "FAIL", f"differential ({pipeline}): exit {proc.returncode}: {msg}"
        for slot, (dtype, numel, ndev) in sorted(slots.items()):
            for a, b in zip(outs["got"][slot], outs["ref"][slot]):
                with open(a, "rb") as fa, open(b, "rb") as fb:
                    why = compare(fa.read(), fb.read(), dtype, 1e-5, 1e-6)
                if why:
                    return "FAIL", f"differential: slot {slot}: {why}"
    return "PASS", "differential (case data does not fit this stage graph): matches --pass-pipeline verify"


def run_case(case_dir: str, args) -> tuple:
    """('PASS'|'FAIL'|'SKIP', reason) for one case directory."""
    case_json, graph = os.path.join(case_dir, "case.json"), os.path.join(case_dir, args.graph)
    if not os.path.isfile(case_json) or not os.path.isfile(graph):
        return "SKIP", f"no case.json or {args.graph}"
    with open(case_json) as f:
        case = json.load(f)
    if args.graph != "graph.json":
        slots = graph_slots(graph)
        for p in case["params"]:
            if p.get("kind") == "var" or p["slot"] not in slots:
                continue
            numel = p["numel"][0] if isinstance(p["numel"], list) else p["numel"]
            if slots[p["slot"]][1] != numel:
                return run_differential(graph, slots, args)
    tol = case.get("tolerance") or {}
    rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
    variables = dict(case.get("vars") or {})
    with tempfile.TemporaryDirectory(prefix="uopc-interp-") as tmp:
        cmd = [args.uopc_run, "--interpret", graph, "--pass-pipeline", args.pipeline]
        outputs = []
        for p in case["params"]:
            if p.get("kind") == "var":
                if "value" in p and p.get("name"):
                    variables.setdefault(p["name"], p["value"])
                continue
            slot = p["slot"]
            if p.get("input"):
                cmd += ["--input", f"{slot}=" + ",".join(os.path.join(case_dir, x) for x in p["input"])]
            if p.get("expected"):
                files = [os.path.join(tmp, f"slot{slot}.dev{d}.bin") for d in range(len(p["expected"]))]
                cmd += ["--output", f"{slot}=" + ",".join(files)]
                outputs.append((p, files))
        for name, value in sorted(variables.items()):
            cmd += ["--var", f"{name}={value}"]
        if not outputs:
            return "SKIP", "the case expects no output"
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return "FAIL", f"timed out after {args.timeout}s"
        if proc.returncode != 0:
            msg = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            return "FAIL", f"exit {proc.returncode}: {msg}"
        why, notes = check_outputs(case_dir, case, outputs, rtol, atol)
        if why:
            return "FAIL", why
    return "PASS", "; ".join(notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc-run", required=True, help="the uopc-run binary")
    ap.add_argument("--corpus", required=True, help="corpus directory (with public/ and perf/)")
    ap.add_argument("--perf", action="store_true", help="also run the perf set")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--graph", default="graph.json",
                    help="graph file of each case to run (default graph.json; e.g. stages/fn0.after-multi.json)")
    ap.add_argument("--pipeline", default="verify", help="--pass-pipeline given to uopc-run (default: verify)")
    ap.add_argument("--min-pass-rate", type=float, default=0.95, help="fail below this pass rate (default 0.95)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per case (default 600)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run in parallel")
    args = ap.parse_args()

    if not os.path.isdir(args.corpus):
        print(f"SKIP corpus: {args.corpus} does not exist")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    sets = ["public"] + (["perf"] if args.perf else [])
    cases = []
    for s in sets:
        root = os.path.join(args.corpus, s)
        if os.path.isdir(root):
            cases += [(f"{s}/{name}", os.path.join(root, name)) for name in sorted(os.listdir(root))
                      if os.path.isdir(os.path.join(root, name)) and args.filter in name]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: run_case(c[1], args), cases))
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for (name, _), (status, why) in zip(cases, results):
        counts[status] += 1
        print(f"{status} {name}" + (f": {why}" if why else ""))
    line = f"{counts['PASS']} passed, {counts['FAIL']} failed"
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
