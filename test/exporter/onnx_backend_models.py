#!/usr/bin/env python3
"""The ONNX models with reference data that the `onnx` package ships (onnx/backend/test/data/{pytorch-converted,
pytorch-operator,simple}/*/: model.onnx, test_data_set_0/input_*.pb, output_*.pb) through the exporter, uopc and
uopc-run, on the C and LLVM targets:

    uopc_tinygrad.export_onnx(MODEL.onnx, DIR/export, shapes)   # in-process: one tinygrad import for all models
    uopc DIR/export/graph.json -o DIR/TARGET --target TARGET
    uopc-run DIR/TARGET/manifest.json --inputs DIR/ref.safetensors --outputs DIR/out.TARGET.ref.safetensors
    uopc-run DIR/TARGET/manifest.json --inputs DIR/fresh.safetensors --outputs DIR/out.TARGET.fresh.safetensors

ref.safetensors is the export's inputs.safetensors (the weights) with the model's inputs replaced by the reference
inputs; its outputs are checked against the reference outputs. fresh.safetensors holds a second, seeded random
input set of the same shapes and dtypes (floats uniform over the reference input's range, integers over its range,
inputs that are shapes, axes, pads, ... kept), checked against ONNX Runtime's outputs on it (where ONNX Runtime
cannot run the model, many opset-6 ones: the onnx package's ReferenceEvaluator, else tinygrad's OnnxRunner; the row
says which), so that a value baked into the graph cannot pass.
Floats pass when every |uopc - want| <= atol * max(1, max |want|) + rtol * |want| (1e-4 each for float32 and
float64, 1e-2 for 16-bit floats; NaN where want is NaN); integers and bools must be equal.

Each model is one row:
  PASS        every output of both input sets within tolerance on every target
  UOPC-FAIL   tinygrad's own OnnxRunner computes the reference outputs (and the fresh ones) but the exporter, uopc or
              uopc-run fails, or their outputs do not match (the row names the stage, the target and the error)
  SKIP        with its reason: tinygrad's OnnxRunner itself fails or is wrong, or the model is out of scope
              (string tensors, sequence/map/optional-typed inputs or outputs)
(tinygrad's OnnxRunner is run on the test data only where the pipeline failed, to tell UOPC-FAIL from SKIP.)
then `N pass, M uopc-fail, K skip` and the wall time; exits 1 on any UOPC-FAIL (or when nothing passed).
Everything is written under a temporary directory (--work DIR to choose it and keep it: each model's folder is
then a repro, the commands printed after the rows), uopc-run's kernel cache included (XDG_CACHE_HOME).

An input the model reads on the host (Expand's shape given as a graph input) is refused by the exporter by name;
it is then exported again with its reference value as a constant (--const NAME=...), the fresh set keeping it.

Runs under the venv's Python (scripts/setup-python.sh: tinygrad 0.14.0, onnx, onnxruntime); under a minute on 2 cores
(28 s, 47 s on the first run: tinygrad's own kernel cache cold); ctest `onnx-backend`:
    build/tinygrad-venv/bin/python test/exporter/onnx_backend_models.py [--uopc build/uopc --uopc-run build/uopc-run]
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

import uopc_tinygrad

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SUITES = ("pytorch-converted", "pytorch-operator", "simple")
TARGETS = ("c", "llvm")
NP_OF_CODE = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
              "I16": np.int16, "I8": np.int8, "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
              "BOOL": np.bool_}
# inputs of these operators that are shapes, axes, pads, sizes, repeats or indices into the input list: their fresh
# values are the reference ones (another shape is another model, not another input set)
SHAPE_INPUTS = {"Expand": {1}, "Reshape": {1}, "Tile": {1}, "ConstantOfShape": {0}, "Slice": {1, 2, 3, 4},
                "Pad": {1, 2, 3}, "Split": {1}, "SplitToSequence": {1}, "Squeeze": {1}, "Unsqueeze": {1},
                "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1},
                "ReduceL1": {1}, "ReduceL2": {1}, "ReduceLogSumExp": {1}, "ReduceSumSquare": {1},
                "ReduceLogSum": {1}, "TopK": {1}, "Range": {0, 1, 2}, "OneHot": {1}, "Resize": {1, 2, 3},
                "Upsample": {1}, "CumSum": {1}, "SequenceAt": {1}, "SequenceInsert": {2}, "SequenceErase": {1}}
ONNX_STRING, ONNX_DOUBLE, ONNX_FLOAT16, ONNX_BFLOAT16 = 8, 11, 10, 16


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("timed out")


def short(text, n=220):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + "..."


def data_dir():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def read_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def load_case(mdir):
    """(model, input names, {name: ref input}, output names, {name: ref output}, scope problem or None)."""
    import onnx
    model = onnx.load(os.path.join(mdir, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    ins = [i for i in model.graph.input if i.name not in inits]
    outs = list(model.graph.output)
    scope = None
    for v, what in [(v, "input") for v in ins] + [(v, "output") for v in outs]:
        kind = v.type.WhichOneof("value")
        if kind != "tensor_type":
            scope = f"out of scope: {what} {v.name!r} is a {kind.replace('_type', '')}, not a tensor"
            break
        if v.type.tensor_type.elem_type == ONNX_STRING:
            scope = f"out of scope: {what} {v.name!r} holds strings"
            break
    ds = os.path.join(mdir, "test_data_set_0")

    def bind(kind, vals):
        got = {}
        files = sorted(glob.glob(os.path.join(ds, f"{kind}_*.pb")), key=lambda p: int(p[:-3].rsplit("_", 1)[1]))
        for i, p in enumerate(files):
            name, arr = read_pb(p)
            got[name if name in {v.name for v in vals} else vals[i].name] = arr
        return got
    ref_in, ref_out = bind("input", ins), bind("output", outs)
    return model, [v.name for v in ins], ref_in, [v.name for v in outs], ref_out, scope


def kept_inputs(model):
    """Graph inputs whose values are shapes/axes/... (SHAPE_INPUTS): the fresh set keeps them."""
    kept = set()
    for n in model.graph.node:
        for k in SHAPE_INPUTS.get(n.op_type, ()):
            if k < len(n.input) and n.input[k]:
                kept.add(n.input[k])
    return kept


def fresh_inputs(name, ref_in, kept):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    out = {}
    for k, x in ref_in.items():
        if k in kept or x.size == 0:
            out[k] = x.copy()
        elif x.dtype == np.bool_:
            out[k] = rng.random(x.shape) < 0.5
        elif np.issubdtype(x.dtype, np.integer):
            lo, hi = int(x.min()), int(x.max())
            out[k] = rng.integers(lo, hi + 1, size=x.shape).astype(x.dtype)
        else:
            lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
            y = rng.uniform(lo, hi, size=x.shape) if hi > lo else rng.standard_normal(x.shape)
            out[k] = np.asarray(np.abs(y) if lo >= 0 else y).astype(x.dtype)
    return out


def to_tensor_entry(code, arr):
    if code == "BF16":
        b = np.asarray(arr, np.float32).view(np.uint32)
        return (code, list(arr.shape), ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16).tobytes())
    return (code, list(arr.shape), np.ascontiguousarray(arr, NP_OF_CODE[code]).tobytes())


def from_tensor_entry(entry):
    code, shape, data = entry
    if code == "BF16":
        return (np.frombuffer(data, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if code not in NP_OF_CODE:
        raise ValueError(f"output dtype {code} not compared")
    return np.frombuffer(data, NP_OF_CODE[code]).reshape(shape)


def compare(got, want, rtol, atol):
    """(ok, error figure, text): the shapes equal, then float max error relative to max(1, max |want|);
    integers/bools exact."""
    want = np.asarray(want)
    got = np.asarray(got)
    if got.shape != want.shape:  # (uopc-run --outputs writes the exporter's shape, ParamArg.shape)
        return False, float("inf"), f"shape {list(got.shape)}, want {list(want.shape)}"
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        bad = int(np.count_nonzero(got.astype(np.int64) != want.astype(np.int64)))
        return bad == 0, float(bad), f"{bad}/{want.size} elements differ" if bad else "exact"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if want.dtype in (np.float16,) or str(want.dtype) == "bfloat16":
        rtol = atol = max(rtol, 1e-2)
    nan_w, nan_g = np.isnan(w), np.isnan(g)
    if np.any(nan_w != nan_g):
        return False, float("inf"), f"NaN at {int(np.count_nonzero(nan_w != nan_g))} elements where want differs"
    fin = ~nan_w
    inf_bad = np.isinf(w[fin]) | np.isinf(g[fin])
    if np.any(inf_bad & (g[fin] != w[fin])):
        return False, float("inf"), "infinities differ"
    fin[fin] = ~inf_bad
    if not np.any(fin):
        return True, 0.0, "no finite values"
    d = np.abs(g[fin] - w[fin])
    scale = max(1.0, float(np.max(np.abs(w[fin]))))
    err = float(np.max(d)) / scale
    ok = bool(np.all(d <= atol * scale + rtol * np.abs(w[fin])))
    return ok, err, f"rel max err {err:.2e}"


def compare_outputs(got, want, out_names, rtol, atol):
    """got/want {name: array}: (ok, worst error, text of the first mismatch)."""
    worst, first = 0.0, None
    for o in out_names:
        if o not in got:
            return False, float("inf"), f"output {o!r} missing"
        ok, err, text = compare(got[o], want[o], rtol, atol)
        worst = max(worst, err)
        if not ok and first is None:
            first = f"output {o!r}: {text}"
    return first is None, worst, first


def run_cmd(cmd, env, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s"
    if p.returncode:
        lines = [ln for ln in (p.stderr + p.stdout).strip().splitlines() if ln.strip()]
        return f"exit {p.returncode}: {lines[-1] if lines else '(no output)'}"
    return None


def pipeline(args, env, root, out_names, want_ref, want_fresh):
    """Worker thread: uopc + uopc-run per target. {target: (ok, text)}."""
    res = {}
    for target in args.targets:
        kdir = os.path.join(root, target)
        err = run_cmd([args.uopc, os.path.join(root, "export", "graph.json"), "-o", kdir, "--target", target,
                       "--force"], env, args.timeout)
        if err:
            res[target] = (False, f"uopc compile: {err}", None)
            continue
        texts, ok_all, bad = [], True, None
        for label, want in (("ref", want_ref), ("fresh", want_fresh)):
            got_file = os.path.join(root, f"out.{target}.{label}.safetensors")
            err = run_cmd([args.uopc_run, os.path.join(kdir, "manifest.json"), "--inputs",
                           os.path.join(root, f"{label}.safetensors"), "--outputs", got_file,
                           "--threads", str(args.threads)], env, args.timeout)
            if err:
                ok_all, bad = False, f"uopc-run ({label} inputs): {err}"
                break
            try:
                got = {k: from_tensor_entry(v) for k, v in uopc_tinygrad.read_safetensors(got_file).items()}
                ok, worst, first = compare_outputs(got, want, out_names, args.rtol, args.atol)
            except Exception as e:  # noqa: BLE001
                ok, worst, first = False, float("inf"), f"reading outputs: {type(e).__name__}: {e}"
            texts.append(f"{label} {worst:.1e}" if worst != float("inf") else f"{label} inf")
            if not ok:
                ok_all, bad = False, f"wrong numbers ({label} inputs): {first}"
        res[target] = (ok_all, bad or " ".join(texts), label if bad else None)
    return res


def tinygrad_outputs(path, feed, out_names):
    from tinygrad import Tensor
    from tinygrad.nn.onnx import OnnxRunner
    runner = OnnxRunner(path)
    res = runner({k: Tensor(np.ascontiguousarray(v)) for k, v in feed.items()})
    return {o: res[o].numpy() if isinstance(res[o], Tensor) else np.asarray(res[o]) for o in out_names}


def ort_why(row):
    """Why ONNX Runtime was not the fresh inputs' oracle, in a few words."""
    text = row.get("oracle_errors", "").split("; ")[0]
    if "Could not find an implementation for " in text:
        return "ORT has no kernel for " + text.split("Could not find an implementation for ")[1].split(" ")[0]
    return short(text, 80)


def onnx_reference_outputs(path, feed, out_names):
    from onnx.reference import ReferenceEvaluator
    res = ReferenceEvaluator(path).run(out_names, dict(feed))
    return dict(zip(out_names, (np.asarray(r) for r in res)))


def tinygrad_check(path, ref_in, ref_out, fresh_in, fresh_want, out_names, args):
    """None when tinygrad's own OnnxRunner gets the reference (and fresh) outputs right, else why not."""
    for label, feed, want in (("reference", ref_in, ref_out), ("fresh", fresh_in, fresh_want)):
        if want is None:
            continue
        try:
            got = tinygrad_outputs(path, feed, out_names)
        except Exception as e:  # noqa: BLE001
            return f"tinygrad's OnnxRunner fails: {type(e).__name__}: {short(e, 160)}"
        ok, _, first = compare_outputs(got, want, out_names, args.rtol, args.atol)
        if not ok:
            return f"tinygrad's OnnxRunner is wrong on the {label} inputs: {first}"
    return None


def repro_commands(args, mdir, root, io_shapes, target, label):
    py = shlex.quote(sys.executable)
    inp = " ".join(f"--input {shlex.quote(f'{n}={d}')}" for n, d in io_shapes)
    return [f"{py} -m uopc_tinygrad {shlex.quote(os.path.join(mdir, 'model.onnx'))} -o {root}/export {inp}".rstrip(),
            f"{shlex.quote(args.uopc)} {root}/export/graph.json -o {root}/{target} --target {target} --force",
            f"{shlex.quote(args.uopc_run)} {root}/{target}/manifest.json --inputs {root}/{label}.safetensors "
            f"--outputs {root}/out.{target}.{label}.safetensors"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", default=os.path.join(REPO, "build", "uopc"))
    ap.add_argument("--uopc-run", default=os.path.join(REPO, "build", "uopc-run"))
    ap.add_argument("--work", help="folder for every model's export, kernels and outputs, kept (default: a temporary "
                                   "folder, removed at the end)")
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated: c, llvm")
    ap.add_argument("--models", help="comma-separated substrings of the model folders' names (default: all)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--jobs", type=int, default=1,
                    help="uopc/uopc-run processes at once, beside the exports in this process (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="uopc-run --threads (default 1)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per export, uopc or uopc-run")
    args = ap.parse_args()
    args.targets = [t for t in args.targets.split(",") if t]
    args.uopc, args.uopc_run = os.path.abspath(args.uopc), os.path.abspath(args.uopc_run)
    t_start = time.perf_counter()
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="uopc-onnx-backend-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    base = data_dir()
    cases = [(suite, os.path.basename(d.rstrip("/")), d) for suite in SUITES
             for d in sorted(glob.glob(os.path.join(base, suite, "*", "")))]
    if args.models:
        pats = args.models.split(",")
        cases = [c for c in cases if any(p in c[1] for p in pats)]
    import onnxruntime as ort
    ort.set_default_logger_severity(3)
    signal.signal(signal.SIGALRM, _alarm)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs))
    rows = {}  # name -> dict
    order = []

    def ort_outputs(path, feed, out_names):
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = {i.name for i in s.get_inputs()}
        return dict(zip(out_names, s.run(out_names, {k: v for k, v in feed.items() if k in names})))

    # phase 1 (this thread): read, ONNX Runtime on the fresh inputs, export; uopc and uopc-run go to the pool
    for suite, name, mdir in cases:
        order.append(name)
        row = rows[name] = {"suite": suite, "mdir": mdir, "root": os.path.join(work, name)}
        path = os.path.join(mdir, "model.onnx")
        try:
            model, in_names, ref_in, out_names, ref_out, scope = load_case(mdir)
        except Exception as e:  # noqa: BLE001
            row["result"] = ("SKIP", f"cannot read the model or its test data: {short(e)}")
            continue
        if scope:
            row["result"] = ("SKIP", scope)
            continue
        if set(ref_in) != set(in_names) or set(ref_out) != set(out_names):
            row["result"] = ("SKIP", "test data does not match the graph's inputs/outputs")
            continue
        fresh = fresh_inputs(name, ref_in, kept_inputs(model))
        row.update(out_names=out_names, ref_in=ref_in, ref_out=ref_out, fresh_in=fresh, path=path,
                   io_shapes=[(n, ",".join(str(d) for d in ref_in[n].shape)) for n in in_names])

        def oracle_outputs():
            row["fresh_want"], row["fresh_from"], why = None, None, []
            for oracle, fn in (("ORT", ort_outputs), ("onnx.reference", onnx_reference_outputs),
                               ("tinygrad", tinygrad_outputs)):
                try:
                    row["fresh_want"], row["fresh_from"] = fn(path, fresh, out_names), oracle
                    break
                except Exception as e:  # noqa: BLE001  (ONNX Runtime lacks the op or the opset: the next oracle)
                    why.append(f"{oracle}: {short(e, 100)}")
            row["oracle_errors"] = "; ".join(why)
        oracle_outputs()
        root = row["root"]
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        exp = os.path.join(root, "export")
        shapes = {n: (tuple(int(d) for d in ref_in[n].shape), None) for n in in_names}
        consts = {}  # inputs the model reads on the host (a shape): given their reference values, as --const
        signal.alarm(args.timeout)
        try:
            while True:
                try:
                    uopc_tinygrad.export_onnx(path, exp, shapes, consts=consts)
                    err = None
                    break
                except uopc_tinygrad.ExportError as e:
                    host = re.search(r"reads input \d+ '([^']*)' on the host", str(e))
                    if not host or host.group(1) not in ref_in or host.group(1) in consts:
                        raise
                    consts[host.group(1)] = ref_in[host.group(1)].ravel().tolist()
        except Exception as e:  # noqa: BLE001
            err = f"{type(e).__name__}: {e}" if not isinstance(e, uopc_tinygrad.ExportError) else str(e)
        finally:
            signal.alarm(0)
        if consts:
            row["consts"] = sorted(consts)
            if any(not np.array_equal(fresh[n], ref_in[n]) for n in consts):
                for n in consts:
                    fresh[n] = ref_in[n].copy()
                oracle_outputs()
        if err:
            row["fail"] = ("export", f"export: {short(err, 300)}")
            continue
        if row["fresh_want"] is None:
            row["fail"] = ("oracle", f"no oracle runs the fresh inputs ({row['oracle_errors']})")
            continue
        try:
            tensors = uopc_tinygrad.read_safetensors(os.path.join(exp, "inputs.safetensors"))
            for label, feed in (("ref", ref_in), ("fresh", fresh)):
                t = dict(tensors)
                for n, x in feed.items():
                    if n in t:
                        if int(np.prod(t[n][1])) != x.size:
                            raise ValueError(f"input {n!r}: the export has {t[n][1]}, the test data {list(x.shape)}")
                        t[n] = to_tensor_entry(t[n][0], x)
                uopc_tinygrad.write_safetensors(os.path.join(root, f"{label}.safetensors"), t)
        except Exception as e:  # noqa: BLE001
            row["fail"] = ("export", f"export inputs: {short(e)}")
            continue
        row["future"] = pool.submit(pipeline, args, env, root, out_names, ref_out, row["fresh_want"])

    # phase 2: results; tinygrad's own OnnxRunner is asked only where the pipeline failed
    counts = {"PASS": 0, "UOPC-FAIL": 0, "SKIP": 0}
    width = max(len(n) for n in order) if order else 10
    repros = []
    for name in order:
        row = rows[name]
        if "future" in row:
            res = row["future"].result()
            if all(ok for ok, _, _ in res.values()):
                fresh_note = "" if row["fresh_from"] == "ORT" else f"  (fresh vs {row['fresh_from']}: {ort_why(row)})"
                const_note = f"  (--const {', '.join(row['consts'])})" if row.get("consts") else ""
                row["result"] = ("PASS", "  ".join(f"{t}: {text}" for t, (_, text, _) in res.items()) + fresh_note +
                                 const_note)
            else:
                bad = [(t, text, label) for t, (ok, text, label) in res.items() if not ok]
                row["fail"] = ("pipeline", "; ".join(f"{t}: {text}" for t, text, _ in bad) +
                               (f"  [{', '.join(t for t, (ok, _, _) in res.items() if ok)} passes]"
                                if len(bad) < len(res) else ""))
                row["fail_target"] = bad[0][0]
                row["fail_label"] = bad[0][2] or "ref"
        if "fail" in row:
            signal.alarm(args.timeout)
            try:
                why = tinygrad_check(row["path"], row["ref_in"], row["ref_out"], row["fresh_in"],
                                     row["fresh_want"] if row.get("fresh_from") not in (None, "tinygrad") else None,
                                     row["out_names"], args)
            except Timeout:
                why = "tinygrad's OnnxRunner timed out"
            finally:
                signal.alarm(0)
            if why:
                row["result"] = ("SKIP", f"{why} [{row['fail'][1][:100]}]" if row["fail"][0] == "pipeline" else why)
            elif row["fail"][0] == "oracle":
                row["result"] = ("SKIP", row["fail"][1])
            else:
                row["result"] = ("UOPC-FAIL", row["fail"][1])
                if args.work:
                    target = row.get("fail_target", args.targets[0])
                    repros.append((name, repro_commands(args, row["mdir"], row["root"], row["io_shapes"], target,
                                                        row.get("fail_label", "ref"))))
        kind, text = row["result"]
        counts[kind] += 1
        print(f"{name:<{width}}  {kind:<9}  {text}", flush=True)
    pool.shutdown()
    if counts["UOPC-FAIL"] and not args.work:
        print("\n(rerun with --work DIR to keep each model's folder and print the commands that reproduce a failure)")
    for name, cmds in repros:
        print(f"\nrepro {name}:")
        for c in cmds:
            print(f"  {c}")
    wall = time.perf_counter() - t_start
    print(f"\n{counts['PASS']} pass, {counts['UOPC-FAIL']} uopc-fail, {counts['SKIP']} skip of {len(order)} models "
          f"({', '.join(args.targets)}; rtol {args.rtol:g}, atol {args.atol:g}; {wall:.0f} s; work {work}"
          f"{'' if args.work else ', removed'})")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if counts["UOPC-FAIL"] or not counts["PASS"] else 0


if __name__ == "__main__":
    sys.exit(main())
