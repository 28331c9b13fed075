#!/usr/bin/env python3
"""A library with its weights given by file, end to end on a generated model (issue 35): an MLP of float32 weights
(two input rows through dense layers with ReLU; the optimizer re-lays out every weight matrix) is written as a uopc
graph with seeded weights, compiled with `uopc --emit library --name tlib` and the weights given one way
(--embed-params: binary data through tlib_params.S, the default; or C text, --format c; or --params-file),
built with exactly the README's commands (cc -O2 -c tlib.c, cc -c tlib_params.S, one link with
test/library/driver.c), run, and compared with uopc-run's output on the same weights (not embedded: the kernels
and the manifest). With the weights baked in or packed, the library must not call a re-layout kernel.

Prints one line per step (wall seconds and peak resident MB from /usr/bin/time -v where it exists: figures only,
nothing is timed against a bound) and 'PASS'/'FAIL'. Exits 1 on a failure.
  weights_model.py --uopc U --uopc-run R [--mb 8] [--format incbin|c|file] [--work DIR] [--cc cc]
bench/library_weights.py runs it at 256 MB and more; ctest `library-weights` at a few MB.
"""
import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def layer_dims(mb):
    """Widths whose float32 weights come to at least `mb` MB: 1024 inputs, hidden layers of width w, 1000 outputs."""
    w = 256
    while True:
        for layers in range(1, 5):
            dims = [1024] + [w] * layers + [1000]
            if sum(a * b + b for a, b in zip(dims, dims[1:])) * 4 >= mb * 2**20:
                return dims
        w *= 2


def graph(dims, batch=2):
    """The tensor-level graph of the MLP (the exporter's form: PARAMs named by the state dict)."""
    nodes, consts = [], {}

    def node(op, dtype, src=(), arg=None):
        n = {"id": len(nodes), "op": op, "dtype": dtype}
        if src:
            n["src"] = list(src)
        if arg is not None:
            n["arg"] = arg
        nodes.append(n)
        return n["id"]

    def const(v):
        if v not in consts:
            consts[v] = node("CONST", "weakint", arg=v)
        return consts[v]

    def shape(*d):
        return node("STACK", "weakint", [const(x) for x in d])

    def param(slot, name, numel):
        arg = {"$": "ParamArg", "slot": slot, "dtype": {"$": "DType", "v": "float32"}, "name": name, "device": "CPU"}
        return node("PARAM", "float32", [const(numel)], arg)

    zero = node("CONST", "weakfloat", arg={"$": "float", "v": "0.0"})
    out = node("RESHAPE", "float32", [param(0, "output0", batch * dims[-1]), shape(batch, dims[-1])])
    x = node("RESHAPE", "float32", [param(1, "input0", batch * dims[0]), shape(batch, dims[0])])
    slot = 2
    for i, (k, n) in enumerate(zip(dims, dims[1:])):
        x3 = node("RESHAPE", "float32", [x, shape(batch, 1, k)])
        w = node("RESHAPE", "float32", [param(slot, f"l{i}.weight", n * k), shape(n, k)])
        w = node("PERMUTE", "float32", [w], [1, 0])
        w = node("RESHAPE", "float32", [w, shape(1, k, n)])
        w = node("PERMUTE", "float32", [w], [0, 2, 1])
        y = node("MUL", "float32", [x3, w])
        y = node("PERMUTE", "float32", [y], [2, 0, 1])
        y = node("REDUCE", "float32", [y], [{"$": "Ops", "v": "ADD"}, 1])
        y = node("ADD", "float32", [y, param(slot + 1, f"l{i}.bias", n)])
        if i + 2 < len(dims):
            y = node("WHERE", "float32", [node("CMPLT", "bool", [zero, y]), y, zero])
        x, slot = y, slot + 2
    store = node("STORE", "void", [out, x])
    node("SINK", "void", [node("AFTER", "float32", [out, store])])
    return {"format": "uopc-graph", "version": 1, "producer": {"name": "test/library/weights_model.py", "version": "1"},
            "semantics": {"pad_fill": "zero"}, "nodes": nodes, "root": len(nodes) - 1}


def floats(rng, n, exponent_byte):
    """n float32 of random sign and mantissa, magnitudes in one binade (0x3c: [2^-7, 2^-6); 0x3f: [0.5, 1))."""
    b = bytearray().join(rng.randbytes(min(4 * n - at, 1 << 24)) for at in range(0, 4 * n, 1 << 24))
    b[2::4] = b[2::4].translate(bytes(i & 0x7F for i in range(256)))
    b[3::4] = b[3::4].translate(bytes((i & 0x80) | exponent_byte for i in range(256)))
    return bytes(b)


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name in sorted(tensors):
        header[name] = {"dtype": "F32", "shape": [len(tensors[name]) // 4], "data_offsets": [offset, offset + len(tensors[name])]}
        offset += len(tensors[name])
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(tensors):
            f.write(tensors[name])


def read_tensor(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        b, e = h[name]["data_offsets"]
        f.seek(8 + n + b)
        return f.read(e - b)


def step(what, cmd, cwd=None, figures=None):
    """Runs cmd under /usr/bin/time -v (when there); records (what, seconds, peak MB); raises on failure."""
    timed = os.path.exists("/usr/bin/time")
    p = subprocess.run((["/usr/bin/time", "-v"] if timed else []) + cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        said = p.stderr.split("\tCommand being timed")[0].strip().splitlines() or ["?"]
        raise RuntimeError(f"{what}: exit {p.returncode}: {said[-1]}")
    secs = mb = float("nan")
    if timed:
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
        secs = sum(float(x) * 60**i for i, x in enumerate(reversed(wall.split(":"))))
        mb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) / 1024
    if figures is not None:
        figures.append((what, secs, mb))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--mb", type=float, default=8, help="at least this many MB of weights")
    ap.add_argument("--format", choices=["incbin", "c", "file"], default="incbin")
    ap.add_argument("--work", help="keep the files here (default: a temporary folder, removed)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="uopc-weights-")
    os.makedirs(work, exist_ok=True)
    try:
        return run(args, work)
    except RuntimeError as e:
        print(f"FAIL library-weights ({args.format}): {e}")
        return 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def run(args, work):
    dims = layer_dims(args.mb)
    g = os.path.join(work, "graph.json")
    with open(g, "w") as f:
        json.dump(graph(dims), f)
    rng = random.Random(35)
    weights = {}
    for i, (k, n) in enumerate(zip(dims, dims[1:])):
        weights[f"l{i}.weight"] = floats(rng, n * k, 0x3C)
        weights[f"l{i}.bias"] = floats(rng, n, 0x3C)
    x = floats(rng, 2 * dims[0], 0x3F)
    write_safetensors(os.path.join(work, "weights.safetensors"), weights)
    weights["input0"] = x
    write_safetensors(os.path.join(work, "all.safetensors"), weights)
    total = sum(len(v) for k, v in weights.items() if k != "input0")
    del weights
    with open(os.path.join(work, "input0.bin"), "wb") as f:
        f.write(x)
    print(f"model: 2 rows through dense layers {dims}, {total / 2**20:.1f} MiB of float32 weights")
    err = end_to_end(args, work, g, os.path.join(work, "weights.safetensors"), os.path.join(work, "all.safetensors"),
                     {"input0": os.path.join(work, "input0.bin")}, args.format)
    print(f"PASS library-weights ({args.format}): the outputs match uopc-run's (relative error {err:.3g}), no re-layout call")
    return 0


def end_to_end(args, work, g, weights, everything, inputs, fmt, tag="lib"):
    """Compiles graph `g` into the library work/TAG with the weights of `weights` given as `fmt` (incbin, c, file),
    builds it with the README's commands (printing each step's figures), runs it through driver.c on `inputs`
    (parameter name -> raw file) and compares every output with uopc-run's on `everything` (all inputs by name).
    Returns the largest relative error; raises RuntimeError for a failed step, a re-layout call left in the library
    or an output that differs."""
    kern, want = os.path.join(work, "kernels"), os.path.join(work, "want.safetensors")
    if not os.path.exists(want):  # the reference: the kernels and uopc-run on the weights as inputs
        step("uopc (kernels)", [args.uopc, g, "-o", kern])
        step("uopc-run", [args.uopc_run, os.path.join(kern, "manifest.json"), "--inputs", everything, "--outputs", want])

    # the library, built with the README's commands
    lib, figures = os.path.join(work, tag), []
    shutil.rmtree(lib, ignore_errors=True)
    flag = {"incbin": ["--embed-params"], "c": ["--embed-params"], "file": ["--params-file"]}[fmt]
    extra = ["--params-format", "c"] if fmt == "c" else []
    step("uopc --emit library", [args.uopc, g, "-o", lib, "--emit", "library", "--name", "tlib", *flag, weights, *extra],
         figures=figures)
    step("cc -O2 -c tlib.c", [args.cc, "-O2", "-c", "tlib.c"], cwd=lib, figures=figures)
    objs = ["tlib.o"]
    if fmt == "incbin":
        step("cc -c tlib_params.S", [args.cc, "-c", "tlib_params.S"], cwd=lib, figures=figures)
        objs.append("tlib_params.o")
    step("cc (link the driver)", [args.cc, "-O2", "-I", ".", os.path.join(HERE, "driver.c"), *objs, "-o", "driver", "-lm"],
         cwd=lib, figures=figures)
    sizes = {f: os.path.getsize(os.path.join(lib, f)) for f in sorted(os.listdir(lib)) if f.startswith("tlib")}
    print("files: " + ", ".join(f"{f} {n / 2**20:.1f} MiB" for f, n in sizes.items()))
    for what, secs, mb in figures:
        print(f"  {what}: {secs:.2f} s, peak {mb:.0f} MB")
    print(f"  build total: {sum(s for _, s, _ in figures):.2f} s, peak {max(m for _, _, m in figures):.0f} MB")

    with open(os.path.join(lib, "tlib.c")) as f:
        calls = re.findall(r"^\s*(k\d+_relayout\d+_CPU)\(", f.read(), re.M)
    if calls:
        raise RuntimeError(f"the library still calls re-layout kernels: {sorted(set(calls))}")
    exe = os.path.join(lib, "driver")
    entries, outputs = [], []
    for line in step("driver --describe", [exe, "--describe"]).splitlines():
        f = line.split()
        if f[0] != "param":
            continue
        name, role, devices = f[1], f[5], int(f[6])
        if devices != 1:
            raise RuntimeError(f"parameter {name} is on {devices} devices")
        out = os.path.join(work, f"{tag}-slot{f[7]}.bin") if role != "input" else ""
        if role != "output" and name not in inputs:
            raise RuntimeError(f"no file for input {name}")
        entries.append(f"{inputs.get(name, '')}:{out}")
        if out:
            outputs.append((name, out))
    pf = ["--params-file", os.path.join(lib, "tlib_params.bin")] if fmt == "file" else []
    step("driver", [exe, *pf, "--", *entries])
    worst = 0.0
    for name, got in outputs:
        w, o = read_tensor(want, name), open(got, "rb").read()
        if len(w) != len(o):
            raise RuntimeError(f"{name}: {len(o)} bytes, uopc-run's {len(w)}")
        a, b = struct.unpack(f"<{len(w) // 4}f", w), struct.unpack(f"<{len(o) // 4}f", o)
        scale = max(1e-30, max(abs(v) for v in a))
        err = max(abs(u - v) for u, v in zip(a, b)) / scale
        if not err <= 1e-5:
            raise RuntimeError(f"{name} differs from uopc-run's: relative error {err:.3g}")
        worst = max(worst, err)
    return worst


if __name__ == "__main__":
    sys.exit(main())
