#!/usr/bin/env python3
"""Whole networks against what CPU users pick: the nine CNN architectures of the `onnx` package's test data
(bench/light_models.py: seeded random weights, logits) and a BERT-base-like transformer encoder, each through
tinygrad's OnnxRunner, the exporter (`python -m uopc_tinygrad MODEL.onnx`), uopc (C and LLVM) and uopc-run, checked
against ONNX Runtime's output and timed side by side with ONNX Runtime, OpenVINO (when installed; float32) and tinygrad
0.14.0 (TinyJit, no BEAM): same thread count, alternating rounds, best time of each. Figures only, never asserted.

Per model it prints: ms of each runtime, ORT/uopc (above 1: uopc is faster), uopc's GFLOP/s (the model's
multiply-adds counted as 2 flops, from ONNX shape inference), uopc's compile seconds, the time to a runnable
program (export + uopc + the first uopc-run, which builds the C kernels or JITs the LLVM modules, in an empty
kernel cache) against tinygrad's first two calls (its JIT captures on the second; with its on-disk compile
cache off, CACHELEVEL=0, as uopc's first run starts from an empty one: with the cache earlier runs left, tinygrad's
first calls took 2.9 s for AlexNet, 4.8 s with it off), and the output's error against ONNX Runtime
(max |uopc - ORT| / max |ORT|).

The roof (each run measures the machine first: bench/fma_peak.c's multiply-add peak and bench/triad.c's memory
bandwidth, both on --threads threads): per kernel of a compiled network, the longer of its ops (uopc's work
model) at the peak and its weights' bytes (the input parameters it reads and the once steps' re-laid-out
copies, which come from memory every run: a network's weights do not stay in the caches between runs) at the
bandwidth; the network's roof is their sum, and "% of roof" the roof over uopc's time. Activations are taken
to stay in the caches (a lower bound on the time, so the figure is an upper bound on how close uopc is).

--tune: per target also `uopc --tune` into a fresh database at uopc's default budget (or --tune-budget), a second
compile with that database alone (which must time nothing and write the same bytes), and the tuned kernels timed
in the same alternating rounds: the tuned time, its ratio to the default's and to ORT's, the search's seconds.

Runs under the venv's Python (scripts/setup-python.sh: tinygrad 0.14.0, onnx, onnxruntime, OpenVINO if it installs).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import light_models  # noqa: E402

CNNS = list(light_models.MODELS)


# ---------------------------------------------------------------------------------------------- the models
def encoder_onnx(path, layers=2, batch=8, seq=128, hidden=768, heads=12, ffn=3072, seed=0):
    """A BERT-base-like encoder (post-norm layers: self-attention, residual, LayerNorm, GELU feed-forward,
    residual, LayerNorm) as an ONNX model of opset 17, seeded random weights; input x [batch, seq, hidden]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    hd = hidden // heads

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def node(op, ins, outs, **attrs):
        nodes.append(helper.make_node(op, ins, outs, **attrs))
        return outs[0]
    const("shape_heads", [batch, seq, heads, hd])
    const("shape_back", [batch, seq, hidden])
    const("sqrt_half", [1 / math.sqrt(2)], np.float32)
    const("one", [1.0], np.float32)
    const("half", [0.5], np.float32)
    const("scale", [1 / math.sqrt(hd)], np.float32)
    x = "x"
    for i in range(layers):
        p = f"l{i}_"

        def linear(inp, n_in, n_out, name):
            y = node("MatMul", [inp, weight(p + name + "_w", (n_in, n_out), 1 / math.sqrt(n_in))], [p + name + "_mm"])
            return node("Add", [y, weight(p + name + "_b", (n_out,), 0.02)], [p + name])

        def split_heads(t, name):
            r = node("Reshape", [t, "shape_heads"], [p + name + "_r"])
            return node("Transpose", [r], [p + name + "_t"], perm=[0, 2, 1, 3])
        q = split_heads(linear(x, hidden, hidden, "q"), "qh")
        k = split_heads(linear(x, hidden, hidden, "k"), "kh")
        v = split_heads(linear(x, hidden, hidden, "v"), "vh")
        kt = node("Transpose", [k], [p + "kt"], perm=[0, 1, 3, 2])
        s = node("Mul", [node("MatMul", [q, kt], [p + "qk"]), "scale"], [p + "scores"])
        a = node("MatMul", [node("Softmax", [s], [p + "probs"], axis=-1), v], [p + "ctx"])
        a = node("Reshape", [node("Transpose", [a], [p + "ctx_t"], perm=[0, 2, 1, 3]), "shape_back"], [p + "ctx_r"])
        h = node("Add", [x, linear(a, hidden, hidden, "o")], [p + "res1"])
        h = node("LayerNormalization", [h, const(p + "ln1_g", np.ones(hidden), np.float32),
                                        const(p + "ln1_b", np.zeros(hidden), np.float32)], [p + "ln1"], axis=-1, epsilon=1e-12)
        f = linear(h, hidden, ffn, "fc1")
        g = node("Mul", [node("Mul", [f, "half"], [p + "gh"]),
                         node("Add", ["one", node("Erf", [node("Mul", [f, "sqrt_half"], [p + "gs"])], [p + "ge"])], [p + "g1"])],
                 [p + "gelu"])
        f = linear(g, ffn, hidden, "fc2")
        x = node("LayerNormalization", [node("Add", [h, f], [p + "res2"]), const(p + "ln2_g", np.ones(hidden), np.float32),
                                        const(p + "ln2_b", np.zeros(hidden), np.float32)], [p + "ln2"], axis=-1, epsilon=1e-12)
    graph = helper.make_graph(nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return [("x", [batch, seq, hidden])], [x]


def model_flops(path):
    """2 x multiply-adds of Conv, Gemm and MatMul (ONNX shape inference)."""
    import onnx
    from onnx import numpy_helper, shape_inference
    m = shape_inference.infer_shapes(onnx.load(path))
    g = m.graph
    shapes = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if dims and all(dims):
            shapes[vi.name] = dims
    for t in g.initializer:
        shapes[t.name] = list(numpy_helper.to_array(t).shape)
    flops = 0
    for n in g.node:
        if n.op_type == "Conv" and n.input[1] in shapes and n.output[0] in shapes:
            w, y = shapes[n.input[1]], shapes[n.output[0]]
            flops += 2 * math.prod(y) * math.prod(w[1:])
        elif n.op_type in ("Gemm", "MatMul") and n.input[0] in shapes and n.output[0] in shapes:
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            k = a[-1]
            if n.op_type == "Gemm":
                k = a[0] if any(a.name == "transA" and a.i for a in n.attribute) else a[-1]
            flops += 2 * math.prod(y) * k
    return flops


# -------------------------------------------------------------------------------------------- the runners
class Ort:
    name = "ORT"

    def __init__(self, path, feed, threads):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        self.s, self.feed = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]), feed

    def __call__(self):
        return self.s.run(None, self.feed)


class OpenVino:
    name = "OpenVINO"

    def __init__(self, path, feed, threads):
        import openvino as ov
        core = ov.Core()
        # float32, as uopc and ORT compute: on a CPU with AMX (this machine's Sapphire Rapids) OpenVINO's default
        # is bfloat16 (ResNet-50: 4.7 ms with 3.6e-3 relative error against ORT, 22.1 ms in float32 with 9.5e-7)
        self.c = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                                   "PERFORMANCE_HINT": "LATENCY",
                                                                   "INFERENCE_PRECISION_HINT": "f32"})
        self.req, self.feed = self.c.create_infer_request(), feed

    def __call__(self):
        return self.req.infer(self.feed)


class Tinygrad:
    """OnnxRunner under TinyJit (its kernels compiled on the first two calls: `first_s`)."""
    name = "tinygrad"

    def __init__(self, path, feed, threads):
        from tinygrad import Tensor, TinyJit
        from tinygrad.nn.onnx import OnnxRunner
        runner = OnnxRunner(path)
        outs = list(runner.graph_outputs)
        self.jit = TinyJit(lambda **kw: [runner(kw)[o].realize() for o in outs])
        self.feed = {k: Tensor(v).realize() for k, v in feed.items()}
        t0 = time.perf_counter()
        for _ in range(2):
            self()
        self.first_s = time.perf_counter() - t0

    def __call__(self):
        return [o.numpy() for o in self.jit(**self.feed)]


def uopc_bench(uopc_run, manifest, inputs, threads, n, env):
    """min ms of n runs of the manifest's steps (uopc-run --bench)."""
    p = subprocess.run([uopc_run, manifest, "--inputs", inputs, "--threads", str(threads), "--bench", str(n)],
                       capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(f"uopc-run --bench: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    m = re.search(r"min ([0-9.]+) us", p.stdout + p.stderr)
    return float(m.group(1)) / 1e3


def tune_target(args, root, exp, inputs, target, env, row):
    """uopc --tune into a fresh database (the default budget unless --tune-budget), then a second compile with
    that database and no --tune: its seconds, what it searched and whether the second compile wrote the same
    bytes. Returns (the tuned manifest, its output file)."""
    db = os.path.join(root, f"tune.{target}.json")
    kdir, again = os.path.join(root, f"{target}-tuned"), os.path.join(root, f"{target}-tuned-again")
    for p in (db, kdir, again):
        subprocess.run(["rm", "-rf", p], check=True)
    cmd = [args.uopc, os.path.join(exp, "graph.json"), "-o", kdir, "--target", target, "--tune", "--tune-db", db]
    if args.tune_budget is not None:
        cmd += ["--tune-budget", str(args.tune_budget)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    row[f"tune_s_{target}"] = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"uopc --tune --target {target}: {p.stderr.strip()[-400:]}")
    m = re.search(r"tune: (\d+) kernels: .*?(\d+) searched in ([0-9.]+) s", p.stderr)
    row[f"tune_kernels_{target}"] = int(m.group(1)) if m else None
    row[f"tune_searched_{target}"] = int(m.group(2)) if m else 0
    # (kernels whose kept list is not the heuristic's)
    lists = {"heuristic": {}, "kept": {}}
    for name, what, opts in re.findall(r"uopc: tune: kernel \d+/\d+ (\S+): (heuristic|kept) \[([^\]]*)\]", p.stderr):
        lists[what][name] = opts
    row[f"tune_changed_{target}"] = sum(1 for k, v in lists["kept"].items() if lists["heuristic"].get(k) != v)
    with open(os.path.join(root, f"tune.{target}.log"), "w") as f:
        f.write(p.stderr)
    p = subprocess.run([args.uopc, os.path.join(exp, "graph.json"), "-o", again, "--target", target, "--tune-db", db],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"uopc --tune-db --target {target}: {p.stderr.strip()[-400:]}")
    row[f"tune_db_timed_{target}"] = "heuristic [" in p.stderr or "best so far" in p.stderr
    row[f"tune_db_identical_{target}"] = subprocess.run(["diff", "-r", "-q", kdir, again], capture_output=True).returncode == 0
    got_file = os.path.join(root, f"out.{target}-tuned.safetensors")
    p = subprocess.run([args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs", inputs, "--outputs", got_file,
                        "--threads", str(args.threads)], capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(f"uopc-run (tuned) --target {target}: {p.stderr.strip()[-400:]}")
    return os.path.join(kdir, "manifest.json"), got_file


def machine_roof(threads):
    """(multiply-add GFLOP/s, memory GB/s) on `threads` threads: bench/fma_peak.c and bench/triad.c built with
    the C compiler, the best of 5 runs each (a 64 MiB triad: 16 bytes an element read or written)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="uopc-roof-") as d:
        flags = ["-O3", "-march=native", "-ffp-contract=fast", "-mprefer-vector-width=512", "-pthread"]
        for name in ("fma_peak", "triad"):
            subprocess.run([os.environ.get("UOPC_CC", "cc"), *flags, os.path.join(here, f"{name}.c"), "-o", os.path.join(d, name)], check=True)
        gflops = float(subprocess.run([os.path.join(d, "fma_peak"), str(threads), "5"], capture_output=True, text=True, check=True).stdout)
        n = 1 << 24
        ms = float(subprocess.run([os.path.join(d, "triad"), str(n), str(threads), "5"], capture_output=True, text=True, check=True).stdout)
    return gflops, 16.0 * n / (ms * 1e-3) / 1e9


def roof_ms(manifest_path, gflops, gbs):
    """The network's roof (module docstring): per kernel step the longer of ops at the peak and weight bytes at
    the bandwidth, summed over the steps every run executes."""
    m = json.load(open(manifest_path))
    params = {p["slot"]: p for p in m["params"]}
    buffers = {b["id"]: b for b in m["buffers"]}
    once = set()
    for st in m["steps"]:
        if st.get("once") and st.get("args") and "buffer" in st["args"][0]:
            once.add(st["args"][0]["buffer"])
    total = 0.0
    for st in m["steps"]:
        if st.get("kind") != "kernel" or st.get("once"):
            continue
        ops = (st.get("estimates") or {}).get("ops", 0)
        ops = ops if isinstance(ops, (int, float)) else 0
        weights = 0
        for a in st.get("args", []):
            if "param" in a and params.get(a["param"], {}).get("role") == "input":
                weights += params[a["param"]]["bytes"] // max(1, len(params[a["param"]]["devices"]))
            elif "buffer" in a and a["buffer"] in once:
                weights += buffers[a["buffer"]]["bytes"]
        total += max(ops / (gflops * 1e9), weights / (gbs * 1e9))
    return total * 1e3


def best_ms(f, n):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t) * 1e3


# ----------------------------------------------------------------------------------------------- the run
def run_model(args, name, root):
    os.makedirs(root, exist_ok=True)
    model = os.path.join(root, f"{name}.onnx")
    if name == "encoder":
        ins, outs = encoder_onnx(model, layers=args.encoder_layers, batch=args.encoder_batch)
    else:
        ins, outs = light_models.prepare(name, model, seed=0)
    flops = model_flops(model)
    exp = os.path.join(root, "export")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "uopc_tinygrad", model, "-o", exp], capture_output=True, text=True)
    export_s = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"export failed: {p.stderr.strip()[-400:]}")
    import uopc_tinygrad
    tensors = uopc_tinygrad.read_safetensors(os.path.join(exp, "inputs.safetensors"))
    feed = {n: np.frombuffer(tensors[n][2], np.float32).reshape(s) for n, s in ins}
    inputs = os.path.join(exp, "inputs.safetensors")
    row = {"model": name, "gflop": flops / 1e9, "export_s": export_s}
    # uopc's compile and first run before any other runtime loads the model: right after a runtime frees the
    # memory of its first calls the kernel's reclaim slows the next processes (measured: uopc-run's build of
    # AlexNet's kernels 0.45 s, 0.9-1.1 s just after tinygrad's first calls, 0.45 s a second later)
    time.sleep(1)  # (after the export's tinygrad process)
    env = dict(os.environ)
    got_files, uopc_runners = {}, []
    for target in args.targets:
        kdir = os.path.join(root, target)
        subprocess.run(["rm", "-rf", kdir], check=True)
        t0 = time.perf_counter()
        p = subprocess.run([args.uopc, os.path.join(exp, "graph.json"), "-o", kdir, "--target", target],
                           capture_output=True, text=True)
        row[f"compile_s_{target}"] = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(f"uopc --target {target}: {p.stderr.strip()[-400:]}")
        # the first run in an empty kernel cache: the C kernels are built (LLVM: JIT-compiled) here
        cache = tempfile.mkdtemp(prefix="uopc-bench-cache-")
        env_t = dict(env, XDG_CACHE_HOME=cache)
        got_file = os.path.join(root, f"out.{target}.safetensors")
        t0 = time.perf_counter()
        p = subprocess.run([args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs", inputs, "--outputs", got_file,
                            "--threads", str(args.threads), "-v"], capture_output=True, text=True, env=env_t)
        row[f"first_run_s_{target}"] = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(f"uopc-run --target {target}: {p.stderr.strip()[-400:]}")
        # (-v: the part of the first run that builds the C kernels or JIT-compiles the LLVM modules; the rest
        # reads the weights, runs the once steps and the network, writes the output)
        m = re.search(r"prepare \(kernel build, JIT or load\) ([0-9.]+) s", p.stdout)
        row[f"build_s_{target}"] = float(m.group(1)) if m else None
        got_files[target] = got_file
        manifest = os.path.join(kdir, "manifest.json")
        row[f"roof_ms_{target}"] = roof_ms(manifest, *args.roof)
        uopc_runners.append((f"uopc {target}", (lambda m=manifest, e=env_t: uopc_bench(args.uopc_run, m, inputs, args.threads, args.inner, e))))
        if args.tune:
            tuned = tune_target(args, root, exp, inputs, target, env_t, row)
            got_files[f"{target} tuned"] = tuned[1]
            uopc_runners.append((f"uopc {target} tuned", (lambda m=tuned[0], e=env_t: uopc_bench(args.uopc_run, m, inputs, args.threads, args.inner, e))))
    ort = Ort(model, feed, args.threads)
    want = ort()[0].reshape(-1)
    for target, got_file in got_files.items():
        got = np.frombuffer(uopc_tinygrad.read_safetensors(got_file)[outs[0]][2], np.float32)
        row[f"err_{target}"] = float(np.abs(got - want).max() / max(1e-30, np.abs(want).max())) if got.size == want.size else float("inf")
    runners = [("ORT", ort)]
    if not args.no_openvino:
        try:
            runners.append(("OpenVINO", OpenVino(model, feed, args.threads)))
        except ImportError:
            row["OpenVINO"] = None
    if not args.no_tinygrad:
        time.sleep(1)  # (the same for tinygrad's first calls)
        tg = Tinygrad(model, feed, args.threads)
        row["tinygrad_first_s"] = tg.first_s
        runners.append(("tinygrad", tg))
    runners += uopc_runners
    # alternating rounds: each runner once per round (best of `inner` runs inside), the best round kept
    times = {k: [] for k, _ in runners}
    for _ in range(args.reps):
        for k, f in runners:
            if k.startswith("uopc"):
                times[k].append(f())
            else:
                f()  # warm
                times[k].append(best_ms(f, args.inner))
    for k in times:
        row[k] = min(times[k])
    return row


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--work", default="build/networks", help="folder for the models, exports and kernels")
    ap.add_argument("--models", default=",".join(CNNS + ["encoder"]), help="comma-separated (default: all nine CNNs and the encoder)")
    ap.add_argument("--targets", default="c,llvm")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3, help="alternating rounds")
    ap.add_argument("--inner", type=int, default=3, help="runs per runner per round (the best counts)")
    ap.add_argument("--encoder-layers", type=int, default=2)
    ap.add_argument("--encoder-batch", type=int, default=8)
    ap.add_argument("--no-tinygrad", action="store_true")
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--tune", action="store_true", help="also uopc --tune per target (a fresh database each) and the tuned kernels timed beside the default's")
    ap.add_argument("--tune-budget", type=float, help="uopc --tune-budget (default: uopc's)")
    ap.add_argument("--quick", action="store_true", help="SqueezeNet only, C only, one round, no tinygrad or OpenVINO")
    args = ap.parse_args()
    # tinygrad compiles its kernels on its first calls only when its disk cache has none of them (read at import)
    os.environ.setdefault("CACHELEVEL", "0")
    if args.quick:
        args.models, args.targets, args.reps, args.inner = "squeezenet", "c", 1, 1
        args.no_tinygrad = args.no_openvino = True
    args.targets = [t for t in args.targets.split(",") if t]
    args.roof = machine_roof(args.threads)
    print(f"machine: {args.roof[0]:.0f} GFLOP/s multiply-add peak, {args.roof[1]:.1f} GB/s memory (triad), {args.threads} threads", flush=True)
    rows = []
    for name in [m for m in args.models.split(",") if m]:
        try:
            row = run_model(args, name, os.path.join(args.work, name))
        except Exception as e:  # noqa: BLE001  (one model's failure is reported, the others still run)
            print(f"{name}: FAILED: {e}", flush=True)
            rows.append({"model": name, "failed": str(e)})
            continue
        rows.append(row)
        parts = [f"{name}: {row['gflop']:.2f} GFLOP", f"ORT {row['ORT']:.1f} ms"]
        if "OpenVINO" in row:
            parts.append(f"OpenVINO {fmt(row['OpenVINO'], '.1f')} ms")
        if "tinygrad" in row:
            parts.append(f"tinygrad {row['tinygrad']:.1f} ms (first calls {row['tinygrad_first_s']:.1f} s)")
        for t in args.targets:
            ms = row[f"uopc {t}"]
            ready = row["export_s"] + row[f"compile_s_{t}"] + row[f"first_run_s_{t}"]
            parts.append(f"uopc {t} {ms:.1f} ms, ORT/uopc {row['ORT'] / ms:.2f}, {row['gflop'] / ms * 1e3:.1f} GFLOP/s, "
                         f"compile {row[f'compile_s_{t}']:.2f} s, ready {ready:.1f} s, err {row[f'err_{t}']:.1e}")
        for t in args.targets if args.tune else []:
            ms, base = row[f"uopc {t} tuned"], row[f"uopc {t}"]
            parts.append(f"uopc {t} tuned {ms:.1f} ms, ORT/uopc {row['ORT'] / ms:.2f}, {base / ms:.2f}x the default's, "
                         f"tune {row[f'tune_s_{t}']:.1f} s ({row[f'tune_searched_{t}']} kernels searched, "
                         f"{row[f'tune_changed_{t}']} changed), database compile identical {row[f'tune_db_identical_{t}']} "
                         f"(timed: {row[f'tune_db_timed_{t}']}), err {row[f'err_{t} tuned']:.1e}")
        print("; ".join(parts), flush=True)
    ok = [r for r in rows if "failed" not in r]
    print("\n| model | GFLOP | ORT ms | OpenVINO ms | tinygrad ms | " +
          " | ".join(f"uopc {t} ms | ORT/uopc {t}" for t in args.targets) + " |")
    print("|---" * (5 + 2 * len(args.targets)) + "|")
    for r in ok:
        print(f"| {r['model']} | {r['gflop']:.2f} | {r['ORT']:.1f} | {fmt(r.get('OpenVINO'), '.1f')} | "
              f"{fmt(r.get('tinygrad'), '.1f')} | " +
              " | ".join(f"{r[f'uopc {t}']:.1f} | {r['ORT'] / r[f'uopc {t}']:.3f}" for t in args.targets) + " |")
    # the time to a runnable program as the network issue counts it: uopc plus the first run's build of the C
    # kernels (or JIT of the LLVM modules), against tinygrad's first two calls (which compile its kernels);
    # then uopc plus the whole first run (also reading the weights from the safetensors file, the once steps,
    # the run itself and writing the output), where tinygrad's figure has its weights in memory already; the
    # export comes before either
    print("\n| model | tinygrad first calls s | " +
          " | ".join(f"uopc + build {t} s (of tinygrad's) | uopc + first run {t} s (of tinygrad's)" for t in args.targets) +
          " | export s |")
    print("|---" * (3 + 2 * len(args.targets)) + "|")
    for r in ok:
        first = r.get("tinygrad_first_s")
        cells = []
        for t in args.targets:
            for part in (r.get(f"build_s_{t}"), r[f"first_run_s_{t}"]):
                ready = None if part is None else r[f"compile_s_{t}"] + part
                cells.append(fmt(ready, ".2f") + (f" ({ready / first:.2f})" if first and ready is not None else ""))
        print(f"| {r['model']} | {fmt(first, '.1f')} | " + " | ".join(cells) + f" | {r['export_s']:.1f} |")
    cnn = [r for r in ok if r["model"] != "encoder"]
    for t in args.targets:
        if cnn:
            g = math.exp(sum(math.log(r["ORT"] / r[f"uopc {t}"]) for r in cnn) / len(cnn))
            print(f"geometric mean ORT/uopc over {len(cnn)} CNNs, {t}: {g:.3f}")
    # the roof (module docstring): how close each build comes to it
    print("\n| model | " + " | ".join(f"{t} roof ms | {t} ms | {t} % of roof" + (f" | {t} tuned % of roof" if args.tune else "")
                                     for t in args.targets) + " |")
    print("|---" * (1 + (4 if args.tune else 3) * len(args.targets)) + "|")
    for r in ok:
        cells = []
        for t in args.targets:
            cells += [f"{r[f'roof_ms_{t}']:.1f}", f"{r[f'uopc {t}']:.1f}", f"{100 * r[f'roof_ms_{t}'] / r[f'uopc {t}']:.0f}"]
            if args.tune:
                cells.append(f"{100 * r[f'roof_ms_{t}'] / r[f'uopc {t} tuned']:.0f}")
        print(f"| {r['model']} | " + " | ".join(cells) + " |")
    if args.tune and ok:
        print("\n| model | " + " | ".join(f"{t} default ms | {t} tuned ms | {t} tuned/default | {t} ORT/tuned | {t} tune s | {t} searched (changed) | {t} database build identical"
                                       for t in args.targets) + " |")
        print("|---" * (1 + 7 * len(args.targets)) + "|")
        for r in ok:
            cells = []
            for t in args.targets:
                d, u = r[f"uopc {t}"], r[f"uopc {t} tuned"]
                cells += [f"{d:.1f}", f"{u:.1f}", f"{d / u:.2f}", f"{r['ORT'] / u:.2f}", f"{r[f'tune_s_{t}']:.0f}",
                          f"{r[f'tune_searched_{t}']} ({r[f'tune_changed_{t}']})",
                          "yes" if r[f"tune_db_identical_{t}"] and not r[f"tune_db_timed_{t}"] else "NO"]
            print(f"| {r['model']} | " + " | ".join(cells) + " |")
        for t in args.targets:
            if cnn:
                g = math.exp(sum(math.log(r["ORT"] / r[f"uopc {t} tuned"]) for r in cnn) / len(cnn))
                gd = math.exp(sum(math.log(r[f"uopc {t}"] / r[f"uopc {t} tuned"]) for r in cnn) / len(cnn))
                print(f"geometric mean ORT/uopc tuned over {len(cnn)} CNNs, {t}: {g:.3f} ({gd:.3f}x the default's)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if len(ok) < len(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
