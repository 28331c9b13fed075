#!/usr/bin/env python3
"""Checks schemas/uop-graph.schema.json against the corpus and against hand-made documents.

  - every corpus <set>/<case>/graph.json and <set>/<case>/stages/*.json must validate;
  - a few hand-made valid documents (every arg encoding) must validate;
  - a few malformed documents must be rejected;
  - extra files given on the command line (e.g. uopc's own output) must validate.

The corpus is $UOPC_CORPUS, else ../shared/corpus next to the repository. A missing corpus counts as a
failure unless --no-corpus is given. Prints "N passed, M failed"; exits 1 when anything failed.
"""
import argparse
import json
import os
import sys
from pathlib import Path

try:
    import jsonschema
except ImportError:  # pragma: no cover
    print("error: python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(2)

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schemas" / "uop-graph.schema.json"


def corpus_dir():
    env = os.environ.get("UOPC_CORPUS")
    return Path(env) if env else REPO.parent / "shared" / "corpus"


def corpus_files(root):
    files = []
    for set_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for case in sorted(p for p in set_dir.iterdir() if p.is_dir()):
            if (case / "graph.json").is_file():
                files.append(case / "graph.json")
            if (case / "stages").is_dir():
                files.extend(sorted((case / "stages").glob("*.json")))
    return files


def base_doc(nodes, root=0, **extra):
    d = {"format": "uopc-graph", "version": 1, "producer": {"name": "check_schema"},
         "semantics": {"pad_fill": "zero"}}
    d.update(extra)
    d["nodes"] = nodes
    d["root"] = root
    return d


def const(i, arg, dtype="int32"):
    return {"id": i, "op": "CONST", "dtype": dtype, "arg": arg}


PARAM_ARG = {"$": "ParamArg", "slot": 0, "dtype": {"$": "DType", "v": "float32"}, "device": "CPU"}

VALID = {
    "minimal": {"format": "uopc-graph", "version": 1, "nodes": [{"id": 0, "op": "SINK", "dtype": "void"}], "root": 0},
    "every arg encoding": base_doc([
        const(0, None), const(1, True), const(2, -9223372036854775808, "int64"),
        const(3, 18446744073709551615, "uint64"), const(4, 0.5, "float32"), const(5, 1e-05, "float32"),
        const(6, {"$": "float", "v": "2.0"}, "float32"), const(7, {"$": "float", "v": "-0.0"}, "float32"),
        const(8, {"$": "float", "v": "-inf"}, "float32"), const(9, {"$": "float", "v": "nan"}, "float32"),
        const(10, {"$": "float", "v": "1e+16"}, "float32"),
        const(11, {"$": "bigint", "v": "-123456789012345678901234567890"}, "weakint"),
        const(12, {"$": "Invalid"}, "float32"), const(13, "a string \u00e9"),
        {"id": 14, "op": "REDUCE", "dtype": "float32", "src": [4], "arg": [{"$": "Ops", "v": "ADD"}, 1]},
        {"id": 15, "op": "RANGE", "dtype": "weakint", "src": [2], "arg": [0, {"$": "AxisType", "v": "LOOP"}]},
        {"id": 16, "op": "CAST", "dtype": "float16", "src": [4], "arg": {"$": "DType", "v": "float16"}},
        {"id": 17, "op": "NOOP", "dtype": "void", "arg": {"$": "UOp", "id": 3}, "tag": [1, None, "t"]},
        {"id": 18, "op": "BINARY", "dtype": "void", "arg": {"$": "bytes", "v": "AAEC/w=="}},
        {"id": 19, "op": "PARAM", "dtype": "float32", "src": [2], "arg": PARAM_ARG},
        {"id": 20, "op": "PARAM", "dtype": "weakint", "src": [], "arg": {
            "$": "ParamArg", "slot": -1, "dtype": {"$": "DType", "v": "weakint"}, "vmin_vmax": [0, 3],
            "name": "_device_num", "addrspace": {"$": "AddrSpace", "v": "ALU"}, "device": ["CPU", "CPU:1"]}},
        {"id": 21, "op": "CALL", "dtype": "void", "src": [19], "arg": {"$": "CallInfo", "name": "f", "precompile": True}},
        {"id": 22, "op": "SINK", "dtype": "void", "arg": {"$": "KernelInfo", "name": "k", "axis_types": [
            {"$": "AxisType", "v": "GLOBAL"}], "beam": 2}},
        {"id": 23, "op": "NOOP", "dtype": "void", "arg": {"$": "BufferizeOpts", "device": "CPU", "removable": False}},
        {"id": 24, "op": "NOOP", "dtype": "void", "arg": {"$": "FutureClass", "x": [1, {"$": "float", "v": "inf"}]}},
        {"id": 25, "op": "UNSHARD", "dtype": "float32", "src": [4], "arg": 0},
        {"id": 26, "op": "SINK", "dtype": "void", "src": list(range(26))},
    ], root=26, stage="after-multi"),
    "root before nodes, pad_fill invalid": {"root": 0, "semantics": {"pad_fill": "invalid"},
                                            "nodes": [{"id": 0, "op": "SINK", "dtype": "void"}],
                                            "version": 1, "format": "uopc-graph"},
}


def bad(mutate, nodes=None):
    d = base_doc(nodes if nodes is not None else [const(0, 1)])
    mutate(d)
    return d


def with_arg(arg, op="CONST"):
    return base_doc([{"id": 0, "op": op, "dtype": "int32", "arg": arg}])


INVALID = {
    "wrong format": bad(lambda d: d.update(format="onnx")),
    "version 2": bad(lambda d: d.update(version=2)),
    "missing root": bad(lambda d: d.pop("root")),
    "missing nodes": bad(lambda d: d.pop("nodes")),
    "unknown top-level field": bad(lambda d: d.update(extra=1)),
    "producer not an object": bad(lambda d: d.update(producer="tinygrad")),
    "bad pad_fill": bad(lambda d: d.update(semantics={"pad_fill": "nan"})),
    "unknown semantics field": bad(lambda d: d.update(semantics={"fast_math": True})),
    "negative root": bad(lambda d: d.update(root=-1)),
    "unknown op": base_doc([{"id": 0, "op": "FOO", "dtype": "int32"}]),
    "unknown dtype": base_doc([{"id": 0, "op": "CONST", "dtype": "float33", "arg": 1}]),
    "node without op": base_doc([{"id": 0, "dtype": "int32"}]),
    "unknown node field": base_doc([{"id": 0, "op": "SINK", "dtype": "void", "extra": 1}]),
    "src not ids": base_doc([{"id": 0, "op": "SINK", "dtype": "void", "src": ["a"]}]),
    "object arg without $": with_arg({"v": 1}),
    "bad float repr": with_arg({"$": "float", "v": "two"}),
    "float v not a string": with_arg({"$": "float", "v": 2.0}),
    "float with extra key": with_arg({"$": "float", "v": "2.0", "w": 1}),
    "bad bigint": with_arg({"$": "bigint", "v": "12x"}),
    "integer beyond uint64": with_arg(18446744073709551616),
    "unknown Ops": with_arg([{"$": "Ops", "v": "FOO"}, 1], "REDUCE"),
    "unknown AxisType": with_arg({"$": "AxisType", "v": "SIDEWAYS"}),
    "unknown AddrSpace": with_arg({"$": "AddrSpace", "v": "HEAP"}),
    "UOp ref without id": with_arg({"$": "UOp"}),
    "bad base64": with_arg({"$": "bytes", "v": "abc"}),
    "lower-case type name": with_arg({"$": "floot", "v": "1"}),
    "ParamArg without slot": with_arg({"$": "ParamArg", "dtype": {"$": "DType", "v": "int32"}}, "PARAM"),
    "ParamArg unknown field": with_arg(dict(PARAM_ARG, bogus=1), "PARAM"),
    "nested bad arg": with_arg([[1, [{"v": 1}]]]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-corpus", action="store_true", help="do not fail when the corpus is missing")
    ap.add_argument("files", nargs="*", help="extra documents that must validate")
    args = ap.parse_args()

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    passed = failed = 0

    def expect(name, doc, valid):
        nonlocal passed, failed
        errors = list(validator.iter_errors(doc))
        if bool(errors) != (not valid):
            failed += 1
            if valid:
                best = jsonschema.exceptions.best_match(errors)
                print(f"FAIL {name}: rejected: {best.message} at {'/'.join(map(str, best.absolute_path))}")
            else:
                print(f"FAIL {name}: malformed document was accepted")
        else:
            passed += 1

    root = corpus_dir()
    if root.is_dir():
        files = corpus_files(root)
        if not files:
            print(f"FAIL corpus: no graph documents under {root}")
            failed += 1
        for f in files:
            expect(str(f.relative_to(root)), json.loads(f.read_text()), True)
    elif args.no_corpus:
        print(f"WARNING: corpus not found at {root}: corpus documents SKIPPED")
    else:
        print(f"FAIL corpus: not found at {root} (set UOPC_CORPUS, or pass --no-corpus to skip)")
        failed += 1

    for name, doc in VALID.items():
        expect("valid: " + name, doc, True)
    for name, doc in INVALID.items():
        expect("malformed: " + name, doc, False)

    for f in args.files:
        try:
            doc = json.loads(Path(f).read_text())
        except (OSError, ValueError) as e:
            print(f"FAIL {f}: {e}")
            failed += 1
            continue
        expect(f, doc, True)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
