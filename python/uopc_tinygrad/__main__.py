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
                    "From Python, call uopc_tinygrad.export directly.\n\n" + uopc_tinygrad.__doc__.split("\n", 2)[2],
        epilog="Then: uopc DIR/graph.json -o OUT && uopc-run OUT/manifest.json --inputs DIR/inputs.safetensors "
               "--outputs result.safetensors")
    ap.add_argument("target", metavar="FILE.py:FN", help="a function returning (fn, args, model)")
    ap.add_argument("-o", "--out", required=True, metavar="DIR", help="where graph.json, io.json, inputs.safetensors go")
    a = ap.parse_args(argv)
    path, _, name = a.target.rpartition(":")
    if not path or not name:
        ap.error("expected FILE.py:FN")
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    if spec is None or spec.loader is None:
        ap.error(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn, args, model = getattr(mod, name)()
    io = uopc_tinygrad.export(fn, *args, out=a.out, model=model)
    print(f"wrote {a.out}/graph.json, io.json, inputs.safetensors: {len(io['inputs'])} inputs, "
          f"{len(io['outputs'])} outputs, {len(io['vars'])} variables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
