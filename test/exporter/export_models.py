#!/usr/bin/env python3
"""End to end from tinygrad programs: five models exported with uopc_tinygrad (an MLP, a CNN with batchnorm
and pooling, a GPT block, a model sharded over two devices, a model with a symbolic size) and a function
reading a view (a slice tinygrad binds without copying its buffer), compiled by uopc
for C and LLVM, run by uopc-run through safetensors (--inputs/--outputs) and compared with tinygrad's own
outputs (floats within rtol 1e-4, atol 1e-5).

Runs under the Python that has tinygrad 0.14 (the venv scripts/setup-python.sh makes under build/). One line
per model and target, then `N passed, M failed`; exits 1 on any failure.
"""
import argparse
import math
import os
import struct
import subprocess
import sys

import uopc_tinygrad  # noqa: E402  (installed from ./python by scripts/setup-python.sh)
from tinygrad import Tensor, Variable, nn  # noqa: E402

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--work", required=True, help="folder for the exported models and their kernels")
    args = ap.parse_args()
    passed = failed = 0
    # the shell entry point documents the same
    h = subprocess.run([sys.executable, "-m", "uopc_tinygrad", "--help"], capture_output=True, text=True)
    ok = h.returncode == 0 and "NAME@0" in h.stdout and "io.json" in h.stdout
    print(f"{'PASS' if ok else 'FAIL'} python -m uopc_tinygrad --help")
    passed, failed = passed + ok, failed + (not ok)
    for name, fn, model, inputs, variables in models():
        out = os.path.join(args.work, name)
        io = uopc_tinygrad.export(fn, *inputs, out=out, model=model)
        results = fn(*inputs)
        results = results if isinstance(results, tuple) else (results,)
        expected = {}
        for j, r in enumerate(results):
            r = r.realize()
            if isinstance(r.device, tuple):  # one tensor per device: the shards along the axis, or copies
                axis = r.uop.axis
                for d, dev in enumerate(r.device):
                    part = r.to(dev) if axis is None else r.shrink(tuple(
                        (d * r.shape[a] // len(r.device), (d + 1) * r.shape[a] // len(r.device)) if a == axis else None
                        for a in range(r.ndim))).to(dev)
                    expected[f"output{j}@{d}"] = bytes(part.contiguous().realize().data())
            else:
                expected[f"output{j}"] = bytes(r.data())
        for target in ("c", "llvm"):
            kdir = os.path.join(out, target)
            subprocess.run(["rm", "-rf", kdir], check=True)
            got_file = os.path.join(out, f"outputs.{target}.safetensors")
            cmd = [args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs", os.path.join(out, "inputs.safetensors"),
                   "--outputs", got_file] + [f"--var={k}={v}" for k, v in variables.items()]
            why = None
            p = subprocess.run([args.uopc, os.path.join(out, "graph.json"), "-o", kdir, "--target", target],
                               capture_output=True, text=True)
            if p.returncode:
                why = f"uopc exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
            else:
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode:
                    why = f"uopc-run exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
            if why is None:
                got = uopc_tinygrad.read_safetensors(got_file)
                for key, want in sorted(expected.items()):
                    if key not in got:
                        why = f"no tensor {key} in {got_file} (has {sorted(got)})"
                        break
                    why = compare(got[key][2], want, got[key][0])
                    if why:
                        why = f"{key}: {why}"
                        break
            print(f"{'FAIL' if why else 'PASS'} {name} ({target})" + (f": {why}" if why else
                  f": {len(io['inputs'])} inputs, {len(expected)} output tensors"))
            passed, failed = passed + (why is None), failed + (why is not None)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
