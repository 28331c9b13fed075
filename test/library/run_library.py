#!/usr/bin/env python3
"""The corpus through `uopc --emit library`: for every case of the public corpus (and with --perf the perf set,
whose kernels are split across threads: the library runs each split loop whole) on CPU devices, compile the
graph into a C library (`--name tlib`), check that a second compile gives byte-identical tlib.c/tlib.h, build
it with `cc -std=c11 -Wall -Werror -O2 -c tlib.c`, link it with test/library/driver.c (which calls
tlib_run_params), run it on the case's inputs and compare the outputs with tinygrad's (run_interpret.py's
comparison: floats within the case's tolerance, integers and bools exactly). A case with variables also runs
with one out of its range and must get 1 + its index back. The model cases (tag "model") run a second time
with their weights given by file: every input slot but the first is written to a .safetensors file (named as the
library names them, slot<N>) and baked in with --embed-params (as binary data: tlib_params.S + tlib_params.bin;
and as C text, --params-format c), or packed with --params-file into tlib_params.bin, which the driver gives
tlib_init; the library must then take only the first input. The driver runs every library twice on one
workspace (what it keeps there between runs, weights it re-laid out, must not change the outputs).

One line per case and mode (PASS/FAIL with the reason), then `N passed, M failed[, K skipped]`. Exits 1 when
anything failed. Without a corpus it prints a visible skip line and exits 0.
"""
import argparse
import filecmp
import json
import os
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "corpus"))
from run_interpret import check_outputs  # noqa: E402  (the shared comparison with the expected outputs)

CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "int32": "I32",
         "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8", "bool": "BOOL"}
CPU = ("CPU", "CLANG", "LLVM", "PYTHON")  # (PYTHON: tinygrad's emulator, host memory)


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, bytes)."""
    header, blob = {}, b""
    for name in sorted(tensors):
        dtype, data = tensors[name]
        size = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2}.get(CODES[dtype], 1)
        header[name] = {"dtype": CODES[dtype], "shape": [len(data) // size], "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)


def last_line(text):
    return (text.strip().splitlines() or ["(no message)"])[-1]


def run(cmd, args, what, **kw):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, **kw)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} timed out after {args.timeout}s")
    if p.returncode != 0:
        raise RuntimeError(f"{what} exit {p.returncode}: {last_line(p.stderr)}")
    return p.stdout


def build(case_dir, tmp, tag, args, extra=()):
    """Compiles the case into tmp/tag (twice: the files must be identical), builds the driver; returns its path."""
    graph = os.path.join(case_dir, "graph.json")
    outs = []
    for k in range(2):
        out = os.path.join(tmp, f"{tag}{k}")
        run([args.uopc, graph, "-o", out, "--emit", "library", "--name", "tlib", *extra], args, "uopc")
        outs.append(out)
    for f in ("tlib.c", "tlib.h"):
        with open(os.path.join(outs[0], f), "rb") as a, open(os.path.join(outs[1], f), "rb") as b:
            if a.read() != b.read():
                raise RuntimeError(f"two compiles wrote different {f}")
    for f in sorted(os.listdir(outs[0])):
        if f.startswith("tlib_params.") and not filecmp.cmp(os.path.join(outs[0], f), os.path.join(outs[1], f), shallow=False):
            raise RuntimeError(f"two compiles wrote different {f}")
    lib = outs[0]
    objs = [os.path.join(lib, "tlib.o")]
    run([args.cc, "-std=c11", "-Wall", "-Werror", "-O2", "-c", "tlib.c", "-o", "tlib.o"], args, "cc tlib.c", cwd=lib)
    if os.path.exists(os.path.join(lib, "tlib_params.S")):  # --embed-params: the weights, .incbin'd from tlib_params.bin
        run([args.cc, "-c", "tlib_params.S", "-o", "tlib_params.o"], args, "cc tlib_params.S", cwd=lib)
        objs.append(os.path.join(lib, "tlib_params.o"))
    exe = os.path.join(tmp, f"{tag}-driver")
    run([args.cc, "-std=c11", "-Wall", "-Werror", "-O2", "-I", lib, os.path.join(HERE, "driver.c"), *objs, "-o", exe, "-lm"],
        args, "cc driver.c")
    return exe


def describe(exe, args):
    params, variables = [], []
    for line in run([exe, "--describe"], args, "driver --describe").splitlines():
        f = line.split()
        if f[0] == "param":
            params.append({"name": f[1], "dtype": f[2], "numel": int(f[3]), "bytes": int(f[4]), "role": f[5],
                           "devices": int(f[6]), "slot": int(f[7])})
        else:
            variables.append({"name": f[1], "min": int(f[2]), "max": int(f[3])})
    return params, variables


def check_case(case_dir, case, tmp, tag, args, embed=None):
    """'' when the case passes in this mode, else the reason (raises RuntimeError for a failed command)."""
    tol = case.get("tolerance") or {}
    rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
    values = dict(case.get("vars") or {})
    by_slot = {p["slot"]: p for p in case["params"] if p.get("kind") != "var"}
    for p in case["params"]:
        if p.get("kind") == "var" and p.get("name") and "value" in p:
            values.setdefault(p["name"], p["value"])
    extra, baked, driver_opts = [], set(), []
    if embed:
        exe = build(case_dir, tmp, tag + "-plain", args)
        params, _ = describe(exe, args)
        inputs = [q for q in params if q["role"] == "input" and by_slot.get(q["slot"], {}).get("input")]
        tensors = {}
        for q in inputs[1:]:
            files = by_slot[q["slot"]]["input"]
            for d, f in enumerate(files):
                with open(os.path.join(case_dir, f), "rb") as fh:
                    tensors[q["name"] if len(files) == 1 else f"{q['name']}@{d}"] = (q["dtype"], fh.read())
            baked.add(q["slot"])
        if not baked:
            return "no weights to bake in"
        st = os.path.join(tmp, "weights.safetensors")
        write_safetensors(st, tensors)
        extra = {"incbin": ["--embed-params", st], "c": ["--embed-params", st, "--params-format", "c"],
                 "file": ["--params-file", st]}[embed]
        if embed == "file":
            driver_opts = ["--params-file", os.path.join(tmp, f"{tag}0", "tlib_params.bin")]
    exe = build(case_dir, tmp, tag, args, extra)
    params, variables = describe(exe, args)
    if baked & {q["slot"] for q in params}:
        return f"slots {sorted(baked)} were to be baked in, the library still takes some"
    entries, outputs = [], []
    for q in params:
        p = by_slot.get(q["slot"])
        if p is None:
            return f"the library takes slot {q['slot']}, which case.json lacks"
        ins = [os.path.join(case_dir, x) for x in p.get("input") or []]
        if ins and len(ins) != q["devices"]:
            return f"slot {q['slot']}: {len(ins)} input files for {q['devices']} devices"
        outs = []
        for d in range(q["devices"]):
            out = os.path.join(tmp, f"{tag}-slot{q['slot']}.dev{d}.bin") if p.get("expected") else ""
            outs.append(out)
            entries.append(f"{ins[d] if ins else ''}:{out}")
        if p.get("expected"):
            outputs.append((p, outs))
    if not outputs:
        return "the case expects no output"
    try:
        var_args = [str(values[v["name"]]) for v in variables]
    except KeyError as e:
        return f"no value for variable {e}"
    run([exe, *driver_opts, *var_args, "--", *entries], args, "driver")
    why, _ = check_outputs(case_dir, case, outputs, rtol, atol)
    if why:
        return why
    # a variable out of its range: the library refuses it with 1 + its index
    for i, v in enumerate(variables):
        if v["max"] < 2**62:
            bad = list(var_args)
            bad[i] = str(v["max"] + 1)
            run([exe, *driver_opts, "--expect-rc", str(i + 1), *bad, "--", *entries], args, f"driver with {v['name']} out of range")
    return ""


def run_case(name, case_dir, args):
    """[(status, label, reason)] for one case: the plain library, and for a model case its weights given three ways."""
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    devices = {d for p in case["params"] for d in p.get("devices") or []}
    if any(d.split(":")[0] not in CPU for d in devices):
        return [("SKIP", name, "not on CPU devices")]
    modes = [("library", None)]
    if "model" in (case.get("tags") or []):
        modes += [("embed", "incbin"), ("embed-c", "c"), ("params-file", "file")]
    results = []
    for label, embed in modes:
        with tempfile.TemporaryDirectory(prefix="uopc-library-") as tmp:
            try:
                why = check_case(case_dir, case, tmp, label, args, embed)
            except RuntimeError as e:
                why = str(e)
            results.append(("FAIL" if why else "PASS", f"{name} [{label}]", why))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", default=os.environ.get("UOPC_CORPUS", ""))
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--perf", action="store_true", help="also run the perf set (its kernels are split across threads)")
    ap.add_argument("--filter", default="")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.corpus, "public")):
        print(f"SKIP corpus-library: no corpus at '{args.corpus}'")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    cases = []
    for s in ["public"] + (["perf"] if args.perf else []):
        root = os.path.join(args.corpus, s)
        if os.path.isdir(root):
            cases += [(f"{s}/{n}", os.path.join(root, n)) for n in sorted(os.listdir(root))
                      if os.path.isfile(os.path.join(root, n, "case.json")) and args.filter in n]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = [r for rs in pool.map(lambda c: run_case(c[0], c[1], args), cases) for r in rs]
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for status, label, why in results:
        counts[status] += 1
        print(f"{status} {label}" + (f": {why}" if why else ""))
    line = f"{counts['PASS']} passed, {counts['FAIL']} failed" + (f", {counts['SKIP']} skipped" if counts["SKIP"] else "")
    print(line)
    if counts["PASS"] + counts["FAIL"] == 0:
        print("error: no case ran", file=sys.stderr)
        return 1
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
