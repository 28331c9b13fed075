#!/usr/bin/env python3
"""The nine light ONNX models of the `onnx` package (onnx/backend/test/data/light/light_*.onnx, made runnable by
bench/light_models.py: seeded random weights, logits) through the shell, as a user would run them:

    python -m uopc_tinygrad MODEL.onnx -o DIR   # export through tinygrad's OnnxRunner
    uopc DIR/graph.json -o DIR/TARGET --target TARGET
    uopc-run DIR/TARGET/manifest.json --inputs DIR/inputs.safetensors --outputs OUT.safetensors

each output against ONNX Runtime's on the exported inputs and on fresh random ones: rel max err = max |uopc - ORT|
/ max |ORT|, a pass below --tolerance (1e-3). Prints one row per model (seconds of the export, of uopc and of the
first uopc-run, which builds the kernels unless uopc's kernel cache has them; the manifest's steps; the two
errors) and `N passed, M failed`; exits 1 on any failure. Slow (minutes: VGG-19's weights alone are 548 MiB),
so not part of `make test` (the exporter test runs SqueezeNet the same way).

Runs under the venv's Python (scripts/setup-python.sh: tinygrad 0.14.0, onnx, onnxruntime):
    build/tinygrad-venv/bin/python test/exporter/onnx_cli_models.py --uopc build/uopc --uopc-run build/uopc-run
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import light_models  # noqa: E402
import uopc_tinygrad  # noqa: E402


def rel_max_err(got, want):
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{os.path.basename(cmd[0]) if cmd[0] != sys.executable else 'python -m uopc_tinygrad'} exit "
                           f"{p.returncode}: {p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else ''}")
    return time.perf_counter() - t0


def one_model(args, name):
    import onnxruntime as ort
    root = os.path.join(args.work, name)
    os.makedirs(root, exist_ok=True)
    model = os.path.join(root, f"{name}.onnx")
    in_specs, out_names = light_models.prepare(name, model, seed=7)
    exp = os.path.join(root, "export")
    row = {"model": name, "export_s": run([sys.executable, "-m", "uopc_tinygrad", model, "-o", exp])}
    with open(os.path.join(exp, "io.json")) as f:
        io = json.load(f)
    kdir = os.path.join(root, args.target)
    subprocess.run(["rm", "-rf", kdir], check=True)
    row["compile_s"] = run([args.uopc, os.path.join(exp, "graph.json"), "-o", kdir, "--target", args.target])
    with open(os.path.join(kdir, "manifest.json")) as f:
        row["steps"] = len(json.load(f).get("steps", []))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    tensors = uopc_tinygrad.read_safetensors(os.path.join(exp, "inputs.safetensors"))
    rng = np.random.default_rng(11)
    feeds = {"exported": {n: np.frombuffer(tensors[n][2], np.float32).reshape(shape) for n, shape in in_specs},
             "fresh": {n: rng.standard_normal(shape).astype(np.float32) for n, shape in in_specs}}
    for label, feed in feeds.items():
        inputs_file = os.path.join(exp, "inputs.safetensors")
        if label == "fresh":
            for n, x in feed.items():
                tensors[n] = ("F32", list(x.shape), x.tobytes())
            inputs_file = os.path.join(root, "fresh.safetensors")
            uopc_tinygrad.write_safetensors(inputs_file, tensors)
        got_file = os.path.join(root, f"outputs.{label}.safetensors")
        row[f"run_s_{label}"] = run([args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs", inputs_file,
                                     "--outputs", got_file])
        got = uopc_tinygrad.read_safetensors(got_file)
        want = session.run(out_names, feed)
        row[f"err_{label}"] = max(rel_max_err(np.frombuffer(got[o][2], np.float32), w.astype(np.float32).reshape(-1))
                                  for o, w in zip(out_names, want))
    row["outputs"] = [o["name"] for o in io["outputs"]]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--work", default="build/onnx-cli-models", help="folder for the models, exports and kernels")
    ap.add_argument("--target", default="c", choices=["c", "llvm"])
    ap.add_argument("--models", default=",".join(light_models.MODELS), help="comma-separated short names")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    args = ap.parse_args()
    passed = failed = 0
    print(f"{'model':<14} {'export s':>9} {'uopc s':>7} {'steps':>6} {'run s':>6}  {'rel max err (exported)':>23} "
          f"{'(fresh)':>9}  result")
    for name in args.models.split(","):
        try:
            r = one_model(args, name)
        except Exception as e:  # noqa: BLE001  (one model's failure is its row)
            print(f"{name:<14} FAIL: {type(e).__name__}: {str(e)[:300]}", flush=True)
            failed += 1
            continue
        ok = r["err_exported"] < args.tolerance and r["err_fresh"] < args.tolerance
        print(f"{name:<14} {r['export_s']:>9.1f} {r['compile_s']:>7.1f} {r['steps']:>6} {r['run_s_exported']:>6.1f}  "
              f"{r['err_exported']:>23.2e} {r['err_fresh']:>9.2e}  {'PASS' if ok else 'FAIL'}", flush=True)
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed ({args.target} target, tolerance {args.tolerance:g})")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
