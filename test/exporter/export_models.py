#!/usr/bin/env python3
"""End to end from tinygrad programs: five models exported with uopc_tinygrad (an MLP, a CNN with batchnorm
and pooling, a GPT block, a model sharded over two devices, a model with a symbolic size), a function
reading a view (a slice tinygrad binds without copying its buffer), the idioms of real programs
(`.contiguous()` and `Tensor.zeros/full` inside, a view as the output, a weight loaded lazily from a
safetensors file on DISK) and an ONNX model of the `onnx` package's test data (SqueezeNet, through
`python -m uopc_tinygrad MODEL.onnx`), compiled by uopc for C and LLVM, run by uopc-run through safetensors
(--inputs/--outputs) and compared with tinygrad's own outputs (ONNX: ONNX Runtime's; floats within rtol 1e-4,
atol 1e-5), on the inputs the export wrote and again on fresh random inputs (so that a value baked into the
graph cannot pass).

Runs under the Python that has tinygrad 0.14 (the venv scripts/setup-python.sh makes under build/). One line
per model and target, then `N passed, M failed`; exits 1 on any failure.
"""
import argparse
import math
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

import uopc_tinygrad  # noqa: E402  (installed from ./python by scripts/setup-python.sh)
from tinygrad import Tensor, Variable, nn  # noqa: E402
from tinygrad.nn.state import safe_load, safe_save  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import light_models  # noqa: E402

DEVS = ("CPU", "CPU:1")


class MLP:
    def __init__(self):
        self.l1, self.l2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def __call__(self, x):
        return self.l2(self.l1(x).relu())


class CNN:
    def __init__(self):
        self.conv, self.bn, self.fc = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Linear(4 * 4 * 4, 3)
        # eval-mode batchnorm with statistics of its own (not the zeros/ones it starts with)
        self.bn.running_mean = Tensor.randn(4) * 0.1
        self.bn.running_var = Tensor.rand(4) + 0.5

    def __call__(self, x):
        x = self.bn(self.conv(x)).relu().max_pool2d(2)
        return self.fc(x.avg_pool2d(1).flatten(1))


class GPTBlock:
    def __init__(self, dim=16, heads=2):
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def __call__(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = [y.reshape(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v)]
        a = q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(a)
        return x + self.fc2(self.fc1(self.ln2(x)).gelu())


class Sharded:
    """A linear layer over a batch split across two devices, weights on both."""
    def __init__(self):
        self.l = nn.Linear(6, 5)
        self.l.weight.shard_(DEVS)
        self.l.bias.shard_(DEVS)

    def __call__(self, x):
        return self.l(x).relu().softmax(-1)


def symbolic_fn(x, n):
    return (x[:n] * 2 + 1).sum(0), x[:n].max(0)


def models():
    Tensor.manual_seed(1337)
    mlp = MLP()
    yield "mlp", mlp, mlp, (Tensor.randn(3, 8),), {}
    cnn = CNN()
    yield "cnn_batchnorm_pool", cnn, cnn, (Tensor.randn(2, 1, 8, 8),), {}
    gpt = GPTBlock()
    yield "gpt_block", gpt, gpt, (Tensor.randn(2, 4, 16),), {}
    sh = Sharded()
    yield "sharded_2dev", sh, sh, (Tensor.randn(4, 6).shard(DEVS, axis=0),), {}
    n = Variable("n", 1, 8).bind(5)
    yield "symbolic_size", (lambda x: symbolic_fn(x, n)), None, (Tensor.randn(8, 3),), {"n": 5}
    # rows 1-2 of a realized buffer: tinygrad passes the slice itself (a SHRINK of the buffer) as a parameter
    w = Tensor.randn(4, 5).realize()[1:3].contiguous().realize()
    yield "view_input", (lambda x: x * w + 1), None, (Tensor.randn(2, 5),), {}
    # the idioms of tinygrad's own models (LLaMA's blocks and BERT's gelu: .contiguous(); ViT's class token,
    # GPT-2's and LLaMA's masks: Tensor.zeros/full; a last-token slice as the output; weights on DISK)
    mlp2 = MLP()
    yield "contiguous_inside", (lambda x: mlp2.l2(mlp2.l1(x).contiguous().gelu().contiguous())), mlp2, (Tensor.randn(3, 8),), {}
    yield "zeros_full_inside", masked_attention, None, (Tensor.randn(2, 5, 4),), {}
    lin = nn.Linear(4, 6)
    yield "view_output", (lambda x: lin(x)[:, -1, :]), lin, (Tensor.randn(2, 3, 4),), {}
    yield "lazy_disk_weight", disk_weight_fn(), None, (Tensor.randn(3, 4),), {}
    # a forward that realizes inside (GPT-2's ends in .realize()): captured lazily, not baked in
    lin2 = nn.Linear(4, 4)
    yield "realize_inside", (lambda x: lin2(x).relu().realize()), lin2, (Tensor.randn(2, 4),), {}


def masked_attention(x):
    """Scores with a causal mask of -inf made by Tensor.full, plus a zeros tensor as a class token."""
    t = x.shape[1]
    mask = Tensor.full((t, t), float("-inf")).triu(1)
    cls = Tensor.zeros(x.shape[0], 1, x.shape[2])
    s = (x @ x.transpose(1, 2) / 2 + mask).softmax(-1) @ x
    return s.cat(cls, dim=1)


def disk_weight_fn():
    """x @ w with w read lazily from a safetensors file (a DISK tensor copied to CPU when the graph runs)."""
    path = os.path.join(tempfile.mkdtemp(prefix="uopc-disk-"), "w.safetensors")
    safe_save({"w": Tensor.randn(4, 5).realize()}, path)
    w = safe_load(path)["w"].to("CPU")
    return lambda x: (x @ w).relu()


def floats(b, code):
    fmt = {"F32": "f", "F64": "d", "F16": "e"}[code]
    return struct.unpack(f"<{len(b) // struct.calcsize(fmt)}{fmt}", b)


def compare(got, want, code):
    if code not in ("F32", "F64", "F16"):
        return None if got == want else "bytes differ"
    g, w = floats(got, code), floats(want, code)
    if len(g) != len(w):
        return f"{len(g)} elements, {len(w)} expected"
    bad = [i for i in range(len(w)) if not (math.isclose(g[i], w[i], rel_tol=1e-4, abs_tol=1e-5) or
                                           (math.isnan(g[i]) and math.isnan(w[i])))]
    return None if not bad else f"{len(bad)}/{len(w)} elements off, first [{bad[0]}]: {g[bad[0]]} vs {w[bad[0]]}"


def device_bytes(t):
    """One tensor's bytes per device: [bytes] for one device, the shards (or copies) in device order else."""
    t = t.realize()
    if not isinstance(t.device, tuple):
        return [bytes(t.data())]
    axis, n, out = t.uop.axis, len(t.device), []
    for d, dev in enumerate(t.device):
        part = t.to(dev) if axis is None else t.shrink(tuple(
            (d * t.shape[a] // n, (d + 1) * t.shape[a] // n) if a == axis else None for a in range(t.ndim))).to(dev)
        out.append(bytes(part.contiguous().realize().data()))
    return out


def entries(name, t):
    """safetensors-style {key: bytes} of a tensor: NAME, or NAME@0, NAME@1, ... on several devices."""
    parts = device_bytes(t)
    return {name: parts[0]} if len(parts) == 1 else {f"{name}@{d}": b for d, b in enumerate(parts)}


def fresh_like(a):
    """New random values of a's shape, dtype and devices (sharded the same way)."""
    if isinstance(a.device, tuple):
        return Tensor.randn(*a.shape, dtype=a.dtype).shard(a.device, axis=a.uop.axis).realize()
    return Tensor.randn(*a.shape, dtype=a.dtype, device=a.device).realize()


def run_and_compare(uopc_run, manifest, inputs_file, got_file, expected, variables):
    cmd = [uopc_run, manifest, "--inputs", inputs_file, "--outputs", got_file] + [f"--var={k}={v}" for k, v in variables.items()]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return f"uopc-run exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
    got = uopc_tinygrad.read_safetensors(got_file)
    for key, want in sorted(expected.items()):
        if key not in got:
            return f"no tensor {key} in {got_file} (has {sorted(got)})"
        why = compare(got[key][2], want, got[key][0])
        if why:
            return f"{key}: {why}"
    return None


def check(args, name, out, io, runs, variables):
    """Compiles out/graph.json for C and LLVM and runs it on each (label, inputs file, {output key: bytes}) of
    runs. Returns (passed, failed)."""
    passed = failed = 0
    for target in ("c", "llvm"):
        kdir = os.path.join(out, target)
        subprocess.run(["rm", "-rf", kdir], check=True)
        p = subprocess.run([args.uopc, os.path.join(out, "graph.json"), "-o", kdir, "--target", target],
                           capture_output=True, text=True)
        for label, inputs_file, expected in runs:
            if p.returncode:
                why = f"uopc exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
            else:
                why = run_and_compare(args.uopc_run, os.path.join(kdir, "manifest.json"), inputs_file,
                                      os.path.join(out, f"outputs.{target}.{label}.safetensors"), expected, variables)
            print(f"{'FAIL' if why else 'PASS'} {name} ({target}, {label} inputs)" + (f": {why}" if why else
                  f": {len(io['inputs'])} inputs, {len(expected)} output tensors"))
            passed, failed = passed + (why is None), failed + (why is not None)
    return passed, failed


def tinygrad_models(args):
    passed = failed = 0
    for name, fn, model, inputs, variables in models():
        out = os.path.join(args.work, name)
        try:
            io = uopc_tinygrad.export(fn, *inputs, out=out, model=model)
        except Exception as e:  # noqa: BLE001  (any failure of the export is this model's failure)
            print(f"FAIL {name} (export): {type(e).__name__}: {str(e).splitlines()[:1]}")
            failed += 1
            continue

        def expected_of(xs):
            results = fn(*xs)
            results = results if isinstance(results, tuple) else (results,)
            want = {}
            for j, r in enumerate(results):
                want.update(entries(f"output{j}", r))
            return want
        runs = [("exported", os.path.join(out, "inputs.safetensors"), expected_of(inputs))]
        # fresh values for every Tensor argument, the weights as exported
        fresh = [fresh_like(a) if isinstance(a, Tensor) else a for a in inputs]
        tensors = uopc_tinygrad.read_safetensors(os.path.join(out, "inputs.safetensors"))
        for i, a in enumerate(fresh):
            if isinstance(a, Tensor):
                for key, blob in entries(f"input{i}", a).items():
                    code, shape, old = tensors[key]
                    assert len(old) == len(blob), (key, len(old), len(blob))
                    tensors[key] = (code, shape, blob)
        fresh_file = os.path.join(out, "fresh.safetensors")
        uopc_tinygrad.write_safetensors(fresh_file, tensors)
        runs.append(("fresh", fresh_file, expected_of(fresh)))
        p, f = check(args, name, out, io, runs, variables)
        passed, failed = passed + p, failed + f
    return passed, failed


class Decoder:
    """One attention head over a KV cache of T positions (state: cache_k, cache_v), written at a symbolic
    position with assign(...).realize() as LLaMA's attention does, its output realized inside too."""
    T, D = 8, 8

    def __init__(self):
        self.wq, self.wk, self.wv = nn.Linear(self.D, self.D), nn.Linear(self.D, self.D), nn.Linear(self.D, self.D)
        for lin in (self.wq, self.wk, self.wv):  # (distinct weights, each its own buffer)
            lin.weight = (Tensor.randn(self.D, self.D) / math.sqrt(self.D)).realize()
            lin.bias = (Tensor.randn(self.D) * 0.1).realize()
        self.cache_k = Tensor.zeros(1, self.T, self.D).contiguous().realize()
        self.cache_v = Tensor.zeros(1, self.T, self.D).contiguous().realize()

    def __call__(self, x, pos):
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        self.cache_k[:, pos:pos + 1, :].assign(k).realize()
        self.cache_v[:, pos:pos + 1, :].assign(v).realize()
        mask = (Tensor.arange(self.T) > pos).where(float("-inf"), 0.0).reshape(1, 1, self.T)
        att = (q @ self.cache_k.transpose(1, 2) / math.sqrt(self.D) + mask).softmax(-1)
        return (att @ self.cache_v).realize()


def kv_cache_decode(args):
    """A decode of T tokens through one compiled program per target: uopc-run once per token, on that token
    and the state (cache_k, cache_v) the run before wrote, --var pos=t; each token's output against tinygrad's
    own step by step."""
    passed = failed = 0
    Tensor.manual_seed(5)
    m = Decoder()
    pos = Variable("pos", 0, Decoder.T - 1)
    xs = [Tensor.randn(1, 1, Decoder.D).realize() for _ in range(Decoder.T)]
    out = os.path.join(args.work, "kv_cache_decode")
    io = uopc_tinygrad.export(lambda x: m(x, pos.bind(0)), xs[0], out=out, model=m)
    want = [bytes(m(xs[t], pos.bind(t)).numpy().tobytes()) for t in range(Decoder.T)]
    ok = sorted(io["state"]) == ["cache_k", "cache_v"]
    print(f"{'PASS' if ok else 'FAIL'} kv_cache_decode: state {io['state']}")
    passed, failed = passed + ok, failed + (not ok)
    for target in ("c", "llvm"):
        kdir = os.path.join(out, target)
        subprocess.run(["rm", "-rf", kdir], check=True)
        p = subprocess.run([args.uopc, os.path.join(out, "graph.json"), "-o", kdir, "--target", target], capture_output=True, text=True)
        why = f"uopc exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}" if p.returncode else None
        tensors = uopc_tinygrad.read_safetensors(os.path.join(out, "inputs.safetensors"))
        for t in range(Decoder.T):
            if why:
                break
            tensors["input0"] = ("F32", [1, 1, Decoder.D], bytes(xs[t].numpy().tobytes()))
            fin, fout = os.path.join(out, f"in.{target}.{t}.safetensors"), os.path.join(out, f"out.{target}.{t}.safetensors")
            uopc_tinygrad.write_safetensors(fin, tensors)
            r = subprocess.run([args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs", fin, "--var", f"pos={t}",
                                "--outputs", fout], capture_output=True, text=True)
            if r.returncode:
                why = f"token {t}: uopc-run exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}"
                break
            got = uopc_tinygrad.read_safetensors(fout)
            why = compare(got["output0"][2], want[t], "F32")
            why = f"token {t}: {why}" if why else None
            for s in io["state"]:  # the state this run wrote is the next run's
                tensors[s] = (got[s][0], tensors[s][1], got[s][2])
        print(f"{'FAIL' if why else 'PASS'} kv_cache_decode ({target}, {Decoder.T} tokens against tinygrad's)" + (f": {why}" if why else ""))
        passed, failed = passed + (why is None), failed + (why is not None)
    why = library_decode(args, out, xs, want)
    print(f"{'FAIL' if why else 'PASS'} kv_cache_decode (library, {Decoder.T} calls of kv_run on the same state buffers)" +
          (f": {why}" if why else ""))
    return passed + (why is None), failed + (why is not None)


LIBRARY_DRIVER = r"""
#include "kv.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
enum { T = %(T)d, D = %(D)d };
int main(int argc, char **argv) {
  static float xs[T * D], ck[T * D], cv[T * D], o[D], all[T * D]; /* the state starts as zeros, as exported */
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(xs, sizeof(float), T * D, f) != T * D) return 2;
  fclose(f);
  void *ws = aligned_alloc(64, (kv_workspace_bytes() + 64) / 64 * 64);
  for (int t = 0; t < T; t++) {
    kv_inputs in = {xs + D * t};
    kv_outputs out = {ck, cv, o};
    kv_vars v = {t};
    if (kv_run(&in, &out, &v, ws) != 0) return 3;
    memcpy(all + D * t, o, sizeof o);
  }
  f = fopen(argv[2], "wb");
  if (!f || fwrite(all, sizeof(float), T * D, f) != T * D) return 4;
  return fclose(f) != 0;
}
"""


def library_decode(args, out, xs, want):
    """The same decode through the C library (--emit library, the weights embedded): kv_run called once per
    token on the same state buffers (the inout fields of kv_outputs), which it reads and updates in place."""
    tensors = uopc_tinygrad.read_safetensors(os.path.join(out, "inputs.safetensors"))
    if any(b != 0 for s in ("cache_k", "cache_v") for b in tensors[s][2]):
        return "the exported state is not zeros (the driver starts from zeros)"
    lib = os.path.join(out, "lib")
    p = subprocess.run([args.uopc, os.path.join(out, "graph.json"), "-o", lib, "--emit", "library", "--name", "kv",
                        "--embed-params", os.path.join(out, "inputs.safetensors")], capture_output=True, text=True)
    if p.returncode:
        return f"uopc --emit library: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
    with open(os.path.join(lib, "driver.c"), "w") as f:
        f.write(LIBRARY_DRIVER % {"T": Decoder.T, "D": Decoder.D})
    exe = os.path.join(lib, "decode")
    p = subprocess.run(["cc", "-O2", "-std=c11", "-I", lib, os.path.join(lib, "kv.c"), os.path.join(lib, "driver.c"), "-o", exe, "-lm"],
                       capture_output=True, text=True)
    if p.returncode:
        return f"cc: {p.stderr.strip().splitlines()[-3:]}"
    xs_file, out_file = os.path.join(lib, "xs.bin"), os.path.join(lib, "out.bin")
    with open(xs_file, "wb") as f:
        f.write(b"".join(bytes(x.numpy().tobytes()) for x in xs))
    p = subprocess.run([exe, xs_file, out_file], capture_output=True, text=True)
    if p.returncode:
        return f"the driver exited {p.returncode}"
    got = open(out_file, "rb").read()
    n = 4 * Decoder.D
    for t in range(Decoder.T):
        why = compare(got[n * t:n * (t + 1)], want[t], "F32")
        if why:
            return f"token {t}: {why}"
    return None


def onnx_model(args, name="squeezenet"):
    """An ONNX model of the onnx package's test data through the shell entry point, against ONNX Runtime."""
    import numpy as np
    import onnxruntime as ort
    out = os.path.join(args.work, f"onnx_{name}")
    os.makedirs(out, exist_ok=True)
    model = os.path.join(out, f"{name}.onnx")
    in_specs, out_names = light_models.prepare(name, model, seed=7)
    p = subprocess.run([sys.executable, "-m", "uopc_tinygrad", model, "-o", out], capture_output=True, text=True)
    if p.returncode:
        print(f"FAIL onnx {name}: export exit {p.returncode}: {p.stderr.strip().splitlines()[-3:]}")
        return 0, 1
    with open(os.path.join(out, "io.json")) as f:
        import json
        io = json.load(f)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    tensors = uopc_tinygrad.read_safetensors(os.path.join(out, "inputs.safetensors"))

    def expected_of(feed):
        return {o: r.astype(np.float32).tobytes() for o, r in zip(out_names, session.run(out_names, feed))}
    exported = {n: np.frombuffer(tensors[n][2], np.float32).reshape(shape) for n, shape in in_specs}
    rng = np.random.default_rng(11)
    fresh = {n: rng.standard_normal(shape).astype(np.float32) for n, shape in in_specs}
    for n, x in fresh.items():
        tensors[n] = ("F32", list(x.shape), x.tobytes())
    fresh_file = os.path.join(out, "fresh.safetensors")
    uopc_tinygrad.write_safetensors(fresh_file, tensors)
    runs = [("exported", os.path.join(out, "inputs.safetensors"), expected_of(exported)),
            ("fresh", fresh_file, expected_of(fresh))]
    return check(args, f"onnx {name}", out, io, runs, {})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--work", required=True, help="folder for the exported models and their kernels")
    args = ap.parse_args()
    passed = failed = 0
    # the shell entry point documents the same
    h = subprocess.run([sys.executable, "-m", "uopc_tinygrad", "--help"], capture_output=True, text=True)
    ok = h.returncode == 0 and "NAME@0" in h.stdout and "io.json" in h.stdout and "MODEL.onnx" in h.stdout
    print(f"{'PASS' if ok else 'FAIL'} python -m uopc_tinygrad --help")
    passed, failed = passed + ok, failed + (not ok)
    for part in (tinygrad_models, kv_cache_decode, onnx_model):
        p, f = part(args)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
