#!/usr/bin/env python3
"""End to end from tinygrad programs: five models exported with uopc_tinygrad (an MLP, a CNN with batchnorm
and pooling, a GPT block, a model sharded over two devices, a model with a symbolic size), a function
reading a view (a slice tinygrad binds without copying its buffer), the idioms of real programs
(`.contiguous()` and `Tensor.zeros/full` inside, a view as the output, a weight loaded lazily from a
safetensors file on DISK, weights left on DISK in the state dict, lazily copied weights, an argument with no
elements, a bfloat16 argument made by bitcast), every dtype uopc shares with tinygrad (in, out and cast into;
fp8, which uopc's targets do not have yet, exported and refused by uopc by name), what the exporter refuses
(by name, on one line, a hostile name escaped and cut) and an ONNX model of the `onnx` package's test data
(SqueezeNet, through `python -m uopc_tinygrad MODEL.onnx`, as it is and with its batch a dimension kept
symbolic by --dynamic N=1:4, one program run at four sizes), compiled by uopc for C and LLVM, run by uopc-run
through safetensors (--inputs/--outputs) and compared with tinygrad's own outputs (ONNX: ONNX Runtime's;
float32 within rtol 1e-4, atol 1e-5, narrower floats within one unit in the last place), on the inputs the
export wrote and again on fresh random inputs (so that a value baked into the graph cannot pass).

Runs under the Python that has tinygrad 0.14 (the venv scripts/setup-python.sh makes under build/). One line
per model and target, then `N passed, M failed`; exits 1 on any failure. --only REGEX reruns some cases.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np  # noqa: E402  (the venv has it: onnx needs it)
import uopc_tinygrad  # noqa: E402  (installed from ./python by scripts/setup-python.sh)
from tinygrad import Tensor, TinyJit, Variable, dtypes, nn  # noqa: E402
from tinygrad.function import function  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402
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
    # a buffer fn makes and adds into twice (T5's relative position buckets: zeros_like, then += twice)
    yield "accumulate_inside", accumulate_inside, None, (Tensor.randn(3, 4),), {}
    lin = nn.Linear(4, 6)
    yield "view_output", (lambda x: lin(x)[:, -1, :]), lin, (Tensor.randn(2, 3, 4),), {}
    # outputs no kernel computes: an input returned as it is, reshaped, sliced (ONNX's Flatten, Split, Squeeze
    # of an input), and one result returned twice: each a buffer of its own
    # and a value computed from constants alone, which tinygrad never stores (an arange)
    yield "input_as_output", (lambda x: (x, x.reshape(6, 4), x[1:2, 2:], x * 2, x * 2, Tensor.arange(5))), None, \
        (Tensor.randn(3, 8),), {}
    yield "lazy_disk_weight", disk_weight_fn(), None, (Tensor.randn(3, 4),), {}
    # a forward that realizes inside (GPT-2's ends in .realize()): captured lazily, not baked in
    lin2 = nn.Linear(4, 4)
    yield "realize_inside", (lambda x: lin2(x).relu().realize()), lin2, (Tensor.randn(2, 4),), {}
    # what tinygrad computes and the exporter used to fail on with tinygrad's own assertions (issue 30 item 7):
    # weights still on DISK in the state dict (safe_load without .to), named and shaped as the state dict has them
    disk = DiskLinear()
    yield "disk_state_dict", disk, disk, (Tensor.randn(3, 4),), {}, {"after_export": disk.unchanged}
    # a weight copied lazily to the device that computes, and an argument copied there by fn (not baked in)
    lw = LazyCopied()
    yield "lazy_copied_weight", lw, lw, (Tensor.randn(3, 4),), {}
    # tinygrad's @function (examples/beautiful_mnist.py's Model.__call__; flat_llama's precompiled blocks): a
    # call of a function of its own, nested, precompiled, returning a tuple: inlined by the exporter
    fm = FunctionModel()
    yield "function_calls", fm, fm, (Tensor.randn(3, 8),), {}
    # a state-dict tensor of a weak dtype (YOLOv8's anchors, extra/models/yolov8.py: an arange times a Python
    # float), which tinygrad cannot store: computed in the graph, no input
    wh = WeakStateHead()
    yield "weak_dtype_state", wh, wh, (Tensor.randn(2, 3),), {}
    # a TinyJit method (RNN-T's), already captured and replaying before the export: its function is captured
    # no Tensor argument: a decode step whose position is a Variable bound inside fn (GPT-2's generate),
    # realized inside: left lazy (the variable is an input), not run at export
    vm = VarModel()
    yield "variable_bound_inside", vm, vm, (), {"n": 5}
    jm = JitModel()
    for _ in range(3):
        jm(Tensor.randn(2, 4).realize()).realize()
    yield "tinyjit_method", jm, jm, (Tensor.randn(2, 4),), {}
    # an argument with no elements (a sum over a 0-length axis, a concatenation with nothing)
    yield "zero_size_input", (lambda x, y: (x.sum(1) + y.sum(1), y.cat(x, dim=1) * 2)), None, \
        (Tensor.randn(3, 0), Tensor.randn(3, 2)), {}
    # a bfloat16 argument made by bitcast (tinygrad has no Python format for it)
    yield "bfloat16_bitcast_input", (lambda x: x.float() * 2 + 1), None, \
        (Tensor.randn(3, 4, dtype=dtypes.float16).bitcast(dtypes.bfloat16),), {}, \
        {"fresh": lambda a: dtype_values("bfloat16", a.shape, np.random.default_rng(9))}
    yield from dtype_models()


class DiskLinear:
    """A linear layer whose weights are safe_load's DISK tensors, not copied to CPU by the model (tinygrad
    copies them when the graph runs). The export must not write the file (it once did, corrupting it)."""
    def __init__(self):
        self.path = os.path.join(tempfile.mkdtemp(prefix="uopc-disk-"), "linear.safetensors")
        safe_save({"weight": Tensor.randn(5, 4).realize(), "bias": Tensor.randn(5).realize()}, self.path)
        with open(self.path, "rb") as f:
            self.original = f.read()
        state = safe_load(self.path)
        self.weight, self.bias = state["weight"], state["bias"]

    def __call__(self, x):
        return (x @ self.weight.to(x.device).T + self.bias.to(x.device)).relu()

    def unchanged(self):
        with open(self.path, "rb") as f:
            return None if f.read() == self.original else f"the export wrote {self.path}"


class FunctionModel:
    """tinygrad's @function: a precompiled block called twice, then a function that calls a function returning
    a tuple."""
    def __init__(self):
        self.l1, self.l2 = nn.Linear(8, 8), nn.Linear(8, 4)

    @function(precompile=True)
    def block(self, x):
        return self.l1(x).relu() + x

    @function
    def two(self, x, y):
        return x + y, x * y

    @function
    def inner(self, x):
        a, b = self.two(x, x * 0.5)
        return self.l2(a - b)

    def __call__(self, x):
        return self.inner(self.block(self.block(x)))


class WeakStateHead:
    """A model whose state dict holds a tensor of dtype weakfloat."""
    def __init__(self):
        self.anchors = Tensor.arange(6).reshape(2, 3) * 0.5
        self.w = Tensor.randn(3, 3)
        assert self.anchors.dtype == dtypes.weakfloat

    def __call__(self, x):
        return x @ self.w + self.anchors


class VarModel:
    """fn() with no Tensor argument: its result depends on a weight and a Variable bound inside, realized."""
    def __init__(self):
        self.w = Tensor.randn(8, 3)

    def __call__(self):
        n = Variable("n", 1, 8).bind(5)
        return (self.w[:n] * 2 + 1).sum(0).realize()


class JitModel:
    """A forward through a TinyJit method."""
    def __init__(self):
        self.l = nn.Linear(4, 3)

    @TinyJit
    def fwd(self, x):
        return self.l(x).relu()

    def __call__(self, x):
        return self.fwd(x) * 2


class LazyCopied:
    """A weight realized on CPU:1 and copied back to CPU lazily, and an argument fn copies to CPU:1."""
    def __init__(self):
        self.w = Tensor.randn(4, 5).realize().to(DEVS[1])
        self.b = Tensor.randn(5).to(DEVS[1])  # not even realized where it was made

    def __call__(self, x):
        return x.to(DEVS[1]) @ self.w + self.b


# every dtype uopc shares with tinygrad and safetensors (the two fnuz fp8s have no safetensors code: refused
# as inputs and outputs, tested as intermediates)
DTYPE_CASES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "fp8e4m3",
               "fp8e5m2", "float16", "bfloat16", "float32", "float64"]


def dtype_values(name, shape, rng):
    """Values of dtype `name` that every operation of dtype_models keeps in range (no integer overflow, finite
    floats), as a CPU tensor made from bytes (no kernel: tinygrad's clang may not build bfloat16 code)."""
    import ml_dtypes
    import numpy as np
    if name == "bool":
        a = rng.integers(0, 2, shape).astype(np.bool_)
    elif name.startswith(("int", "uint")):
        lo = -40 if name.startswith("int") else 0
        a = rng.integers(lo, 40, shape).astype(getattr(np, name))
    else:
        np_dt = {"fp8e4m3": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2, "bfloat16": ml_dtypes.bfloat16,
                 "float16": np.float16, "float32": np.float32, "float64": np.float64}[name]
        a = (rng.standard_normal(shape) * 3).astype(np_dt)
    return Tensor(a.tobytes(), dtype=getattr(dtypes, name)).reshape(shape).realize()


def dtype_models():
    """Per dtype: an argument of it (kept in its dtype, and cast to float32) and a float32 argument cast into
    it; the fnuz fp8s as intermediates. Inputs made by dtype_values, fresh ones too."""
    import numpy as np
    rng = np.random.default_rng(3)
    for name in DTYPE_CASES:
        dt = getattr(dtypes, name)
        fresh = (lambda a, name=name: dtype_values(name, a.shape, rng))

        def same(x):  # an operation in the dtype itself
            return x.logical_not() if x.dtype == dtypes.bool else (x + x.flip(-1) if dtypes.is_int(x.dtype) else x * 2 + x.flip(-1))
        opts = {"bfloat16": name == "bfloat16", "uopc_may_refuse": f"dtype {name} is not supported" if name.startswith("fp8") else None}
        yield f"dtype_{name}", (lambda x: (same(x), x.cast(dtypes.float32) * 2 + 1)), None, \
            (dtype_values(name, (3, 4), rng),), {}, {**opts, "fresh": fresh}
        # (a negative float cast to an unsigned integer has no defined value: C leaves it undefined)
        yield f"dtype_{name}_cast_into", (lambda z, dt=dt: ((z.abs() if dtypes.is_unsigned(dt) else z) * 4).cast(dt)), None, \
            (dtype_values("float32", (3, 4), rng),), {}, {**opts, "fresh": lambda a: dtype_values("float32", a.shape, rng)}
    for name in ("fp8e4m3fnuz", "fp8e5m2fnuz"):
        yield f"dtype_{name}_inside", (lambda z, dt=getattr(dtypes, name): (z * 4).cast(dt).cast(dtypes.float32)), None, \
            (dtype_values("float32", (3, 4), rng),), {}, \
            {"fresh": lambda a: dtype_values("float32", a.shape, rng), "uopc_may_refuse": f"dtype {name} is not supported"}


def masked_attention(x):
    """Scores with a causal mask of -inf made by Tensor.full, plus a zeros tensor as a class token."""
    t = x.shape[1]
    mask = Tensor.full((t, t), float("-inf")).triu(1)
    cls = Tensor.zeros(x.shape[0], 1, x.shape[2])
    s = (x @ x.transpose(1, 2) / 2 + mask).softmax(-1) @ x
    return s.cat(cls, dim=1)


def accumulate_inside(x):
    b = Tensor.zeros_like(x)
    b += x * 2
    b += (x > 0).where(x, 1.0)
    return b.sum(1) + 1


def disk_weight_fn():
    """x @ w with w read lazily from a safetensors file (a DISK tensor copied to CPU when the graph runs)."""
    path = os.path.join(tempfile.mkdtemp(prefix="uopc-disk-"), "w.safetensors")
    safe_save({"w": Tensor.randn(4, 5).realize()}, path)
    w = safe_load(path)["w"].to("CPU")
    return lambda x: (x @ w).relu()


# float codes: numpy dtype, and the relative tolerance (float32's 1e-4; one unit in the last place of the
# narrow floats, whose rounding of intermediate results may differ)
FLOAT_CODES = {"F32": ("float32", 1e-4), "F64": ("float64", 1e-4), "F16": ("float16", 1e-3), "BF16": ("bfloat16", 2**-7),
               "F8_E4M3": ("float8_e4m3fn", 2**-3), "F8_E5M2": ("float8_e5m2", 2**-2)}


def floats(b, code):
    import ml_dtypes
    name = FLOAT_CODES[code][0]
    return np.frombuffer(b, getattr(np, name, None) or getattr(ml_dtypes, name, None)).astype(np.float64).tolist()


def compare(got, want, code):
    if code not in FLOAT_CODES:
        return None if got == want else "bytes differ"
    g, w = floats(got, code), floats(want, code)
    if len(g) != len(w):
        return f"{len(g)} elements, {len(w)} expected"
    rel = FLOAT_CODES[code][1]
    bad = [i for i in range(len(w)) if not (math.isclose(g[i], w[i], rel_tol=rel, abs_tol=1e-5) or
                                           (math.isnan(g[i]) and math.isnan(w[i])))]
    return None if not bad else f"{len(bad)}/{len(w)} elements off, first [{bad[0]}]: {g[bad[0]]} vs {w[bad[0]]}"


_LLVM_DEVICE = []


def on_llvm_device(fn, xs):
    """fn(*xs) on a CPU device that tinygrad renders with its LLVM backend, realized, as bytes per output:
    the expected values of bfloat16 cases where tinygrad's default C compiler cannot build bfloat16 code
    (clang 14 has no __bf16 on x86)."""
    with Context(DEV="CPU:LLVM"):
        results = fn(*[x.to("CPU:7") if isinstance(x, Tensor) else x for x in xs])
        results = results if isinstance(results, tuple) else (results,)
        want = {}
        for j, r in enumerate(results):
            want.update(entries(f"output{j}", r))
        return want


def raw_bytes(t):
    """A realized tensor's elements as bytes (read as unsigned integers: no Python format for bfloat16, fp8)."""
    if t.dtype != dtypes.bool and t.dtype.itemsize in (1, 2, 4, 8):
        t = t.bitcast({1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[t.dtype.itemsize])
    return bytes(t.contiguous().realize().data()) if t.numel() else b""


def device_bytes(t):
    """One tensor's bytes per device: [bytes] for one device, the shards (or copies) in device order else."""
    t = t.realize()
    if not isinstance(t.device, tuple):
        return [raw_bytes(t)]
    axis, n, out = t.uop.axis, len(t.device), []
    for d, dev in enumerate(t.device):
        part = t.to(dev) if axis is None else t.shrink(tuple(
            (d * t.shape[a] // n, (d + 1) * t.shape[a] // n) if a == axis else None for a in range(t.ndim))).to(dev)
        out.append(raw_bytes(part))
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


def run_and_compare(uopc_run, manifest, inputs_file, got_file, expected, variables, shapes=None):
    """uopc-run on inputs_file; each expected output's bytes compared, and its shape with `shapes` (key ->
    io.json's shape: --outputs writes a one-device output with it). Returns why not, or None."""
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
        if shapes and key in shapes and list(got[key][1]) != list(shapes[key]):
            return f"{key}: written with the shape {list(got[key][1])}, io.json's is {list(shapes[key])}"
    return None


def without_sanitizer_report(stderr):
    """stderr without the statistics LeakSanitizer appends when a suppression matched (make asan: the LLVM
    plugin's thread-local storage, scripts/lsan.supp), stripped."""
    lines = stderr.strip().splitlines()
    if "Suppressions used:" in lines:
        cut = lines.index("Suppressions used:")
        lines = lines[:cut - 1 if cut > 0 and set(lines[cut - 1]) == {"-"} else cut]
    return "\n".join(lines).strip()


def check(args, name, out, io, runs, variables, may_refuse=None):
    """Compiles out/graph.json for C and LLVM and runs it on each (label, inputs file, {output key: bytes}) of
    runs. may_refuse: what uopc may say instead (a dtype its targets do not have yet), one line per target
    then. Returns (passed, failed)."""
    passed = failed = 0
    for target in ("c", "llvm"):
        kdir = os.path.join(out, target)
        subprocess.run(["rm", "-rf", kdir], check=True)
        p = subprocess.run([args.uopc, os.path.join(out, "graph.json"), "-o", kdir, "--target", target],
                           capture_output=True, text=True)
        said = without_sanitizer_report(p.stderr)
        if p.returncode == 1 and may_refuse and may_refuse in said and len(said.splitlines()) == 1:
            print(f"PASS {name} ({target}): exported; uopc refuses it by name: {said}")
            passed += 1
            continue
        for label, inputs_file, expected in runs:
            if p.returncode:
                why = f"uopc exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
            else:
                shapes = {e["name"]: e["shape"] for e in io["outputs"] if len(e["devices"]) == 1}
                why = run_and_compare(args.uopc_run, os.path.join(kdir, "manifest.json"), inputs_file,
                                      os.path.join(out, f"outputs.{target}.{label}.safetensors"), expected, variables,
                                      shapes)
            print(f"{'FAIL' if why else 'PASS'} {name} ({target}, {label} inputs)" + (f": {why}" if why else
                  f": {len(io['inputs'])} inputs, {len(expected)} output tensors"))
            passed, failed = passed + (why is None), failed + (why is not None)
    return passed, failed


def tinygrad_models(args):
    passed = failed = 0
    for name, fn, model, inputs, variables, *opts in models():
        if args.only and not re.search(args.only, name):
            continue
        opts = opts[0] if opts else {}
        out = os.path.join(args.work, name)
        try:
            io = uopc_tinygrad.export(fn, *inputs, out=out, model=model)
        except Exception as e:  # noqa: BLE001  (any failure of the export is this model's failure)
            print(f"FAIL {name} (export): {type(e).__name__}: {str(e).splitlines()[:1]}")
            failed += 1
            continue
        why = opts["after_export"]() if "after_export" in opts else None
        if why:
            print(f"FAIL {name} (export): {why}")
            failed += 1
            continue

        def expected_of(xs):
            try:
                results = fn(*xs)
                results = results if isinstance(results, tuple) else (results,)
                want = {}
                for j, r in enumerate(results):
                    want.update(entries(f"output{j}", r))
                return want
            except Exception:  # noqa: BLE001  (bfloat16 where tinygrad's clang has none: its LLVM backend)
                if not opts.get("bfloat16") and not any(isinstance(x, Tensor) and x.dtype == dtypes.bfloat16 for x in xs):
                    raise
                return on_llvm_device(fn, xs)
        runs = [("exported", os.path.join(out, "inputs.safetensors"), expected_of(inputs))]
        # fresh values for every Tensor argument, the weights as exported
        fresh = [opts.get("fresh", fresh_like)(a) if isinstance(a, Tensor) else a for a in inputs]
        tensors = uopc_tinygrad.read_safetensors(os.path.join(out, "inputs.safetensors"))
        missing = [f"input{i}" for i, a in enumerate(fresh) if isinstance(a, Tensor) and
                   not any(k == f"input{i}" or k.startswith(f"input{i}@") for k in tensors)]
        if missing:  # (a value baked into the graph)
            print(f"FAIL {name} (export): {missing} not among the exported inputs {sorted(tensors)}")
            failed += 1
            continue
        for i, a in enumerate(fresh):
            if isinstance(a, Tensor):
                for key, blob in entries(f"input{i}", a).items():
                    code, shape, old = tensors[key]
                    assert len(old) == len(blob), (key, len(old), len(blob))
                    tensors[key] = (code, shape, blob)
        fresh_file = os.path.join(out, "fresh.safetensors")
        uopc_tinygrad.write_safetensors(fresh_file, tensors)
        runs.append(("fresh", fresh_file, expected_of(fresh)))
        p, f = check(args, name, out, io, runs, variables, opts.get("uopc_may_refuse"))
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
    p = subprocess.run(["cc", "-O2", "-std=c11", "-I", lib, os.path.join(lib, "kv.c"), os.path.join(lib, "kv_params.S"),
                        os.path.join(lib, "driver.c"), "-o", exe, "-lm"], capture_output=True, text=True)
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


def onnx_dynamic(args, name="squeezenet", lo=1, hi=4):
    """The same model with its batch a named dimension N, exported with --dynamic N=1:4: one compiled program
    per target, run at several N (uopc-run --var N=...) on the exported inputs and on fresh ones, each against
    ONNX Runtime on the first N rows, the rows past N zeros. And --dynamic naming no dimension: refused."""
    import onnx
    import onnxruntime as ort
    out = os.path.join(args.work, f"onnx_{name}_dynamic")
    os.makedirs(out, exist_ok=True)
    model = os.path.join(out, f"{name}.onnx")
    in_specs, out_names = light_models.prepare(name, model, seed=7)
    m = onnx.load(model)
    for v in list(m.graph.input) + list(m.graph.output):
        for dim in v.type.tensor_type.shape.dim[:1]:  # (the logits light_models keeps have no shape given)
            dim.ClearField("dim_value")
            dim.dim_param = "N"
    onnx.save(m, model)
    p = subprocess.run([sys.executable, "-m", "uopc_tinygrad", model, "-o", out, "--dynamic", f"M={lo}:{hi}"], capture_output=True, text=True)
    err = p.stderr.strip()
    ok = p.returncode == 1 and len(err.splitlines()) == 1 and "'M'" in err and "no ONNX input" in err
    print(f"{'PASS' if ok else 'FAIL'} onnx {name} --dynamic of no dimension refused: {err[:160]}")
    passed, failed = int(ok), int(not ok)
    p = subprocess.run([sys.executable, "-m", "uopc_tinygrad", model, "-o", out, "--dynamic", f"N={lo}:{hi}"], capture_output=True, text=True)
    if p.returncode:
        print(f"FAIL onnx {name} --dynamic N={lo}:{hi}: export exit {p.returncode}: {p.stderr.strip().splitlines()[-3:]}")
        return passed, failed + 1
    import json
    with open(os.path.join(out, "io.json")) as f:
        io = json.load(f)
    ok = io["vars"] == [{"name": "N", "slot": io["vars"][0]["slot"], "value": hi, "min": lo, "max": hi}] and \
        all(e.get("dynamic") == {"0": "N"} for e in io["inputs"] + io["outputs"] if e["name"] in [n for n, _ in in_specs] + out_names)
    print(f"{'PASS' if ok else 'FAIL'} onnx {name} --dynamic N={lo}:{hi}: io.json {io['vars']}")
    passed, failed = passed + ok, failed + (not ok)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    tensors = uopc_tinygrad.read_safetensors(os.path.join(out, "inputs.safetensors"))
    exported = {n: np.frombuffer(tensors[n][2], np.float32).reshape([hi] + shape[1:]) for n, shape in in_specs}
    rng = np.random.default_rng(13)
    fresh = {n: rng.standard_normal([hi] + shape[1:]).astype(np.float32) for n, shape in in_specs}
    for n, x in fresh.items():
        tensors[n] = ("F32", list(x.shape), x.tobytes())
    fresh_file = os.path.join(out, "fresh.safetensors")
    uopc_tinygrad.write_safetensors(fresh_file, tensors)
    for target in ("c", "llvm"):
        kdir = os.path.join(out, target)
        subprocess.run(["rm", "-rf", kdir], check=True)
        p = subprocess.run([args.uopc, os.path.join(out, "graph.json"), "-o", kdir, "--target", target], capture_output=True, text=True)
        why = f"uopc exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}" if p.returncode else None
        runs = [("exported", os.path.join(out, "inputs.safetensors"), exported, n) for n in (lo, hi)] + \
               [("fresh", fresh_file, fresh, n) for n in (lo + 1, hi - 1)]
        for label, inputs_file, feed, n in runs:
            if why:
                break
            got_file = os.path.join(out, f"outputs.{target}.{label}.{n}.safetensors")
            r = subprocess.run([args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs", inputs_file, "--outputs", got_file,
                                "--var", f"N={n}"], capture_output=True, text=True)
            if r.returncode:
                why = f"N={n}: uopc-run exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}"
                break
            got = uopc_tinygrad.read_safetensors(got_file)
            want = session.run(out_names, {k: v[:n] for k, v in feed.items()})
            for o, w in zip(out_names, want):
                g = np.frombuffer(got[o][2], np.float32).reshape((hi,) + w.shape[1:])
                why = compare(g[:n].tobytes(), w.astype(np.float32).tobytes(), "F32") or \
                    (None if not np.any(g[n:]) else f"rows past N={n} are not zeros")
                if why:
                    why = f"{label} inputs, N={n}, {o}: {why}"
                    break
        print(f"{'FAIL' if why else 'PASS'} onnx {name} --dynamic N={lo}:{hi} ({target}, one program run at N = "
              f"{lo}, {hi} on the exported inputs, {lo + 1}, {hi - 1} on fresh ones)" + (f": {why}" if why else ""))
        passed, failed = passed + (why is None), failed + (why is not None)
    return passed, failed


HOSTILE = "evil\x1b[31m\nname'\\" + "x" * 100_000  # a control sequence, a newline, a quote, 100 KB


def refusals(args):
    """What the exporter cannot export is refused in its own words (uopc_tinygrad.ExportError), naming the
    tensor and why, on one line with untrusted text (names, tinygrad's messages) escaped and shortened; never
    tinygrad's raw assertion."""
    fnuz = Tensor(bytes(12), dtype=dtypes.fp8e4m3fnuz).reshape(3, 4)
    cases = [  # name, fn, args, model, words the message must hold
        ("zero_size_output", lambda x: (x * 2, x[:, :0] * 2), (Tensor.randn(3, 4),), None, ["output1", "no elements"]),
        ("fnuz_input", lambda x: x.float() * 2, (fnuz,), None, ["input0", "fp8e4m3fnuz", "safetensors"]),
        ("fnuz_output", lambda z: z.cast(dtypes.fp8e5m2fnuz), (Tensor.randn(3, 4),), None, ["output0", "fp8e5m2fnuz"]),
        ("hostile_weight_name", lambda x: x + HOSTILE_MODEL[HOSTILE].float(), (Tensor.randn(3, 4),), HOSTILE_MODEL,
         ["fp8e4m3fnuz", "evil\\x1b[31m\\x0aname\\'\\\\xxx"]),
        ("fn_fails", lambda x: x + Tensor.ones(5), (Tensor.randn(3, 4),), None, ["output0", "IndexError", "shape mismatch"]),
        # a buffer fn realizes from no argument and no variable, returned: its copy would bake the value in
        ("baked_output", lambda x: (BAKED_W * 2).realize(), (Tensor.randn(2),), None, ["output0", "baked"]),
        # an argument's value read on the host (a count, a shape) would be baked into the graph
        ("host_read_input", lambda x, n: x[:int(n.item())] * 2, (Tensor.randn(4, 3), Tensor([2])), None,
         ["input 1", "input1", "on the host", "baked"]),
    ]
    passed = failed = 0
    for name, fn, xs, model, words in cases:
        try:
            uopc_tinygrad.export(fn, *xs, out=os.path.join(args.work, "refuse_" + name), model=model)
            why = "exported"
        except uopc_tinygrad.ExportError as e:
            msg = str(e)
            missing = [w for w in words if w not in msg]
            why = (f"message lacks {missing}: {msg[:300]!r}" if missing else "not one line" if "\n" in msg or "\x1b" in msg
                   else f"message of {len(msg)} characters" if len(msg) > 600 else None)
        except Exception as e:  # noqa: BLE001
            why = f"{type(e).__name__} (not the exporter's own error): {str(e)[:200]!r}"
        print(f"{'FAIL' if why else 'PASS'} refuses {name}" + (f": {why}" if why else ": " + msg[:160]))
        passed, failed = passed + (why is None), failed + (why is not None)
    # an ONNX input larger than the machine's memory: refused before tinygrad allocates it (not the OOM killer)
    import onnx
    from onnx import TensorProto, helper
    big = os.path.join(args.work, "refuse_huge_input.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "huge", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 20, 1 << 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 20, 1 << 20])]), opset_imports=[helper.make_opsetid("", 17)]), big)
    try:
        uopc_tinygrad.export_onnx(big, os.path.join(args.work, "refuse_huge_input"))
        why = "exported"
    except uopc_tinygrad.ExportError as e:
        msg = str(e)
        why = None if all(w in msg for w in ("'x'", "4096.0 GiB", "memory")) else f"message: {msg[:300]!r}"
    print(f"{'FAIL' if why else 'PASS'} refuses huge_onnx_input" + (f": {why}" if why else ": " + msg[:160]))
    passed, failed = passed + (why is None), failed + (why is not None)
    # an ONNX input used as a shape (Expand's): refused by name, then fixed by --const (integers only)
    exp = os.path.join(args.work, "refuse_expand.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Expand", ["x", "shape"], ["y"])], "expand",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1]), helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])]), opset_imports=[helper.make_opsetid("", 17)]), exp)
    for extra, rc, words in (([], 1, ["'shape'", "on the host", "--const"]), (["--const", "shape=3,1.5"], 1, ["integers"]),
                             (["--const", "shape=3,4"], 0, ["1 inputs, 1 outputs"])):
        p = subprocess.run([sys.executable, "-m", "uopc_tinygrad", exp, "-o", os.path.join(args.work, "refuse_expand"), *extra],
                           capture_output=True, text=True)
        said = (p.stderr if rc else p.stdout).strip()
        ok = p.returncode == rc and len(said.splitlines()) == 1 and all(w in said for w in words)
        print(f"{'PASS' if ok else 'FAIL'} onnx input read as a shape {' '.join(extra) or '(no --const)'}: exit {p.returncode}: {said[:160]}")
        passed, failed = passed + ok, failed + (not ok)
    # the shell entry point: exit 1 and one line of its own
    p = subprocess.run([sys.executable, "-m", "uopc_tinygrad", f"{os.path.abspath(__file__)}:zero_size_output_program",
                        "-o", os.path.join(args.work, "refuse_cli")], capture_output=True, text=True)
    err = p.stderr.strip()
    ok = p.returncode == 1 and len(err.splitlines()) == 1 and "output0" in err and "Traceback" not in err
    print(f"{'PASS' if ok else 'FAIL'} refuses from the shell (exit {p.returncode}): {err[:160]}")
    return passed + ok, failed + (not ok)


BAKED_W = Tensor.randn(3).realize()
HOSTILE_MODEL = {HOSTILE: Tensor(bytes(12), dtype=dtypes.fp8e4m3fnuz).reshape(3, 4)}


def zero_size_output_program():
    """For the shell refusal: (fn, args, model) with an output of no elements."""
    return (lambda x: x[:0] + 1), (Tensor.randn(3, 4),), None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--work", required=True, help="folder for the exported models and their kernels")
    ap.add_argument("--only", metavar="REGEX", help="only the cases whose name matches (a quick rerun)")
    args = ap.parse_args()
    passed = failed = 0
    # the shell entry point documents the same
    h = subprocess.run([sys.executable, "-m", "uopc_tinygrad", "--help"], capture_output=True, text=True)
    ok = h.returncode == 0 and "NAME@0" in h.stdout and "io.json" in h.stdout and "MODEL.onnx" in h.stdout
    print(f"{'PASS' if ok else 'FAIL'} python -m uopc_tinygrad --help")
    passed, failed = passed + ok, failed + (not ok)
    for part in (tinygrad_models, kv_cache_decode, onnx_model, onnx_dynamic, refusals):
        if args.only and part is not tinygrad_models and not re.search(args.only, part.__name__):
            continue
        p, f = part(args)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
