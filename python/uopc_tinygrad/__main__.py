"""python -m uopc_tinygrad: export a tinygrad program from the shell (see --help)."""
import argparse
import importlib.util
import os
import sys

import uopc_tinygrad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m uopc_tinygrad",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Export what a tinygrad program computes as a uopc graph.\n\n"
                    "FILE.py:FN names a function of a Python file; it is called with no arguments and returns\n"
                    "(fn, args, model): uopc_tinygrad.export(fn, *args, out=DIR, model=model) then runs.\n"
                    "MODEL.onnx is exported through tinygrad's OnnxRunner (uopc_tinygrad.export_onnx): inputs,\n"
                    "outputs and weights keep their ONNX names; inputs.safetensors holds seeded random inputs.\n"
                    "From Python, call uopc_tinygrad.export directly.\n\n" + uopc_tinygrad.__doc__.split("\n", 2)[2],
        epilog="Then: uopc DIR/graph.json -o OUT && uopc-run OUT/manifest.json --inputs DIR/inputs.safetensors "
               "--outputs result.safetensors")
    ap.add_argument("--version", action="version",
                    version=f"uopc_tinygrad {uopc_tinygrad.__version__} (writes uopc-graph format version "
                            f"{uopc_tinygrad.GRAPH_FORMAT_VERSION})")
    ap.add_argument("target", metavar="FILE.py:FN | MODEL.onnx", help="a function returning (fn, args, model), or an ONNX model")
    ap.add_argument("-o", "--out", required=True, metavar="DIR", help="where graph.json, io.json, inputs.safetensors go")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE[:DTYPE]",
                    help="ONNX only: the shape (D0,D1,...) and optionally dtype (float32, int64, ...) of an input")
    ap.add_argument("--dynamic", action="append", default=[], metavar="DIM=MIN:MAX",
                    help="ONNX only: keep the named input dimension DIM symbolic, a uopc variable in [MIN, MAX] "
                         "(uopc-run --var DIM=SIZE); buffers hold MAX along it, outputs are zeros past SIZE")
    ap.add_argument("--const", action="append", default=[], metavar="NAME=V0,V1,...",
                    help="ONNX only: give input NAME these values in the export and make it no input of the graph "
                         "(a shape or axes the model reads on the host, Expand's shape: the graph is specialized to "
                         "them); its shape is --input's, else 1-D")
    a = ap.parse_args(argv)
    if a.target.endswith(".onnx"):
        dynamic = {}
        for spec in a.dynamic:
            name, eq, rest = spec.rpartition("=")
            lo, colon, hi = rest.partition(":")
            try:
                lo, hi = int(lo), int(hi)
            except ValueError:
                colon = ""
            if not eq or not name or not colon:
                ap.error(f"--dynamic expects DIM=MIN:MAX, got {uopc_tinygrad._quote(spec)}")
            dynamic[name] = (lo, hi)
        shapes = {}
        for spec in a.input:
            name, eq, rest = spec.rpartition("=")
            dims, _, dt = rest.partition(":")
            try:
                shape = tuple(int(d) for d in dims.split(",") if d.strip())
            except ValueError:
                shape = None
            if not eq or not name or shape is None or any(d < 0 for d in shape):
                ap.error(f"--input expects NAME=D0,D1,...[:DTYPE], got {uopc_tinygrad._quote(spec)}")
            shapes[name] = (shape, dt or None)
        consts = {}
        for spec in a.const:
            name, eq, rest = spec.partition("=")
            try:
                values = [int(v) if v.strip().lstrip("+-").isdigit() else float(v) for v in rest.split(",") if v.strip()]
            except ValueError:
                values = None
            if not eq or not name or values is None or name in consts:
                ap.error(f"--const expects NAME=V0,V1,... (numbers), once per input, got {uopc_tinygrad._quote(spec)}")
            consts[name] = values
        if not os.path.isfile(a.target):
            ap.error(f"no such file: {uopc_tinygrad._quote(a.target)}")
        try:
            io = uopc_tinygrad.export_onnx(a.target, a.out, shapes, dynamic=dynamic, consts=consts)
        except uopc_tinygrad.ExportError as e:
            print(f"python -m uopc_tinygrad: error: {e}", file=sys.stderr)
            return 1
        except Exception as e:  # noqa: BLE001  (OnnxRunner's own errors: an operator it lacks, a bad file)
            print(f"python -m uopc_tinygrad: error: tinygrad's OnnxRunner failed on {uopc_tinygrad._quote(a.target)} "
                  f"({uopc_tinygrad._tinygrad_error(e)})", file=sys.stderr)
            return 1
        print(f"wrote {a.out}/graph.json, io.json, inputs.safetensors: {len(io['inputs'])} inputs, "
              f"{len(io['outputs'])} outputs, {len(io['vars'])} variables")
        return 0
    elif a.input or a.dynamic or a.const:
        ap.error("--input, --dynamic and --const are for ONNX models")
    path, _, name = a.target.rpartition(":")
    if not path or not name:
        ap.error("expected FILE.py:FN")
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    if spec is None or spec.loader is None:
        ap.error(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn, args, model = getattr(mod, name)()
    try:
        io = uopc_tinygrad.export(fn, *args, out=a.out, model=model)
    except uopc_tinygrad.ExportError as e:
        print(f"python -m uopc_tinygrad: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {a.out}/graph.json, io.json, inputs.safetensors: {len(io['inputs'])} inputs, "
          f"{len(io['outputs'])} outputs, {len(io['vars'])} variables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
