#!/usr/bin/env python3
"""Figures for a library with its weights inside (issue 35): seconds and peak resident MB of `uopc --emit library
--embed-params` and of every build step the README gives (cc -O2 -c NAME.c, cc -c NAME_params.S, the link with
test/library/driver.c), for
  - a generated MLP with at least --mb MB of float32 weights (test/library/weights_model.py; default 256),
  - the onnx package's light ResNet-50 and VGG-19 with seeded random weights (bench/light_models.py, exported with
    python -m uopc_tinygrad from build/tinygrad-venv; --onnx resnet50,vgg19),
and with --before the C-text form of the same weights (--params-format c, what --embed-params wrote before: uopc
and cc -O2 -c, the latter skipped past --before-cc-max-mb of C, reported with the C file's size). Each library is
run and its outputs compared with uopc-run's on the same weights (not embedded). Figures only: nothing is timed
against a bound. Usage:
  bench/library_weights.py [--uopc build/uopc] [--uopc-run build/uopc-run] [--mb 256] [--onnx resnet50,vgg19]
                           [--before] [--before-uopc U] [--work DIR]
--before-uopc: the uopc whose C text to time (an older build: today's uopc writes the same text, streamed).
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "library"))
import weights_model  # noqa: E402


def split_safetensors(src, dst, keep):
    """Copies the tensors of `src` whose name satisfies keep(name) to `dst`, streaming their bytes."""
    with open(src, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        names = sorted(k for k in header if k != "__metadata__" and keep(k))
        out, at = {}, 0
        for k in names:
            b, e = header[k]["data_offsets"]
            out[k] = dict(header[k], data_offsets=[at, at + e - b])
            at += e - b
        text = json.dumps(out).encode()
        with open(dst, "wb") as g:
            g.write(struct.pack("<Q", len(text)) + text)
            for k in names:
                b, e = header[k]["data_offsets"]
                f.seek(8 + n + b)
                left = e - b
                while left:
                    chunk = f.read(min(left, 64 << 20))
                    g.write(chunk)
                    left -= len(chunk)
    return names


def export_onnx(name, work, python):
    """Exports the light model `name` into work/name (cached); returns (graph, inputs.safetensors, [input names])."""
    exp = os.path.join(work, name)
    meta = os.path.join(exp, "bench-inputs.json")
    if not os.path.exists(meta):
        os.makedirs(exp, exist_ok=True)
        model = os.path.join(exp, f"{name}.onnx")
        code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import light_models; "
                f"ins, _ = light_models.prepare({name!r}, {model!r}, seed=0); print(json.dumps([n for n, _ in ins]))")
        p = subprocess.run([python, "-c", code], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"library_weights: preparing {name} failed: {p.stderr[-2000:]}")
        names = json.loads(p.stdout.strip().splitlines()[-1])
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        p = subprocess.run([python, "-m", "uopc_tinygrad", model, "-o", exp], capture_output=True, text=True, env=env)
        if p.returncode:
            sys.exit(f"library_weights: exporting {name} failed: {p.stderr[-2000:]}")
        with open(meta, "w") as f:
            json.dump(names, f)
    with open(meta) as f:
        return os.path.join(exp, "graph.json"), os.path.join(exp, "inputs.safetensors"), json.load(f)


def raw_tensor(path, name, dst):
    with open(dst, "wb") as f:
        f.write(weights_model.read_tensor(path, name))
    return dst


def before(args, work, g, weights, label):
    """The C-text form: uopc (the --before-uopc build) and cc -O2 -c, unless the C is too large to build here."""
    lib, figures = os.path.join(work, "before"), []
    shutil.rmtree(lib, ignore_errors=True)
    cmd = [args.before_uopc, g, "-o", lib, "--emit", "library", "--name", "tlib", "--embed-params", weights]
    if args.before_uopc == args.uopc:
        cmd += ["--params-format", "c"]
    try:
        weights_model.step("uopc --emit library (C text)", cmd, figures=figures)
    except RuntimeError as e:
        print(f"  {label} before: {e}")
        return
    size = os.path.getsize(os.path.join(lib, "tlib.c")) / 2**20
    print(f"  {label} before: tlib.c {size:.0f} MiB of C")
    if size > args.before_cc_max_mb:
        print(f"  {label} before: cc -O2 -c not run ({size:.0f} MiB of C is past --before-cc-max-mb {args.before_cc_max_mb:g}; "
              f"cc needs about 16 times the C's size in memory)")
    else:
        try:
            weights_model.step("cc -O2 -c tlib.c (C text)", [args.cc, "-O2", "-c", "tlib.c"], cwd=lib, figures=figures)
        except RuntimeError as e:
            print(f"  {label} before: {e}")
    for what, secs, mb in figures:
        print(f"  {label} before: {what}: {secs:.2f} s, peak {mb:.0f} MB")
    shutil.rmtree(lib, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", default=os.path.join(ROOT, "build", "uopc"))
    ap.add_argument("--uopc-run", default=os.path.join(ROOT, "build", "uopc-run"))
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--mb", type=float, default=256, help="the generated model's MB of weights (0: none)")
    ap.add_argument("--onnx", default="", help="light models, comma-separated (resnet50,vgg19)")
    ap.add_argument("--python", default=os.path.join(ROOT, "build", "tinygrad-venv", "bin", "python"))
    ap.add_argument("--before", action="store_true", help="also the C-text form")
    ap.add_argument("--before-uopc", default="", help="the uopc of the C-text form (default --uopc)")
    ap.add_argument("--before-cc-max-mb", type=float, default=1024)
    ap.add_argument("--format", choices=["incbin", "file"], default="incbin")
    ap.add_argument("--quick", action="store_true", help="bench/run.sh --quick: an 8 MB model only")
    ap.add_argument("--work", help="keep files (and exports) here")
    args = ap.parse_args()
    args.before_uopc = args.before_uopc or args.uopc
    if args.quick:
        args.mb, args.onnx, args.before = 8, "", False
    work = args.work or tempfile.mkdtemp(prefix="uopc-library-weights-")
    os.makedirs(work, exist_ok=True)
    failed = 0
    try:
        if args.mb > 0:
            d = os.path.join(work, f"generated-{args.mb:g}")
            os.makedirs(d, exist_ok=True)
            print(f"== generated MLP, {args.mb:g} MB")
            try:
                weights_model.run(args, d)
                if args.before:
                    before(args, d, os.path.join(d, "graph.json"), os.path.join(d, "weights.safetensors"), "generated")
            except RuntimeError as e:
                print(f"FAIL generated: {e}")
                failed += 1
        for name in [n for n in args.onnx.split(",") if n]:
            print(f"== {name}")
            g, inputs, arg_names = export_onnx(name, work, args.python)
            d = os.path.dirname(g)
            weights = os.path.join(d, "weights.safetensors")
            kept = split_safetensors(inputs, weights, lambda k: k not in arg_names)
            print(f"{len(kept)} weight tensors, {os.path.getsize(weights) / 2**20:.1f} MiB; the caller's: {arg_names}")
            files = {n: raw_tensor(inputs, n, os.path.join(d, f"arg{i}.bin")) for i, n in enumerate(arg_names)}
            try:
                err = weights_model.end_to_end(args, d, g, weights, inputs, files, args.format)
                print(f"PASS {name}: the outputs match uopc-run's (relative error {err:.3g}), no re-layout call")
            except RuntimeError as e:
                print(f"FAIL {name}: {e}")
                failed += 1
            if args.before:
                before(args, d, g, weights, name)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
