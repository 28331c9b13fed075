#!/usr/bin/env python3
"""Checks schemas/manifest.schema.json against the manifests uopc writes.

Every case of the given corpora (DIR/<set>/<case>/graph.json or DIR/<case>/graph.json) is compiled with
`uopc graph.json -o OUT --target T` for each --target (default: c and llvm, the kernels written: the manifest
as it is shipped, symbols and files of shared kernels included) and OUT/manifest.json is validated against
the schema. A few hand-made manifests the schema must refuse check that it still says something (an opt it does
not know, a field it does not know). Prints one line per failure and "N passed, M failed"; exits 1 on any failure.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import jsonschema
except ImportError:  # pragma: no cover
    print("error: python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(2)

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schemas" / "manifest.schema.json"


def cases(root: Path):
    out = []
    for p in sorted(root.iterdir()):
        if (p / "graph.json").is_file():
            out.append(p)
        elif p.is_dir():
            out += [q for q in sorted(p.iterdir()) if (q / "graph.json").is_file()]
    return out


def compile_case(uopc, case: Path, target: str, flags):
    with tempfile.TemporaryDirectory(prefix="uopc-manifest-") as tmp:
        out = os.path.join(tmp, "out")
        p = subprocess.run([uopc, str(case / "graph.json"), "-o", out, "--target", target] + flags,
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            return None, f"uopc exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1]}"
        with open(os.path.join(out, "manifest.json")) as f:
            return json.load(f), None


def errors(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def describe(e):
    return "/".join(str(x) for x in e.absolute_path) + ": " + e.message[:300]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", action="append", default=[], help="a corpus root (repeatable)")
    ap.add_argument("--target", action="append", default=[], help="c, llvm, ptx (repeatable; default c and llvm)")
    ap.add_argument("--uopc-flag", action="append", default=[], help="one more flag for every compile")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    targets = a.target or ["c", "llvm"]
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    all_cases = []
    for root in a.corpus:
        if not Path(root).is_dir():
            print(f"FAIL corpus {root}: not a directory")
            return 1
        all_cases += cases(Path(root))
    passed = failed = 0
    opts_seen = set()
    sample = None
    jobs = [(case, t) for t in targets for case in all_cases]
    with ThreadPoolExecutor(a.jobs) as ex:
        for (case, t), (doc, err) in zip(jobs, ex.map(lambda j: compile_case(a.uopc, j[0], j[1], a.uopc_flag), jobs)):
            name = f"{t} {case.parent.name}/{case.name}"
            if err:
                failed += 1
                print(f"FAIL {name}: {err}")
                continue
            errs = errors(validator, doc)
            if errs:
                failed += 1
                print(f"FAIL {name}: {len(errs)} schema errors; first: {describe(errs[0])}")
                continue
            passed += 1
            for st in doc["steps"]:
                for o in st.get("opts", []):
                    opts_seen.add(o.split(":")[0])
            if sample is None and any(st["kind"] == "kernel" for st in doc["steps"]):
                sample = doc

    # The schema must still refuse: an opt it does not know, a field it does not know, a ptx step without a launch.
    if sample is not None:
        step = next(i for i, st in enumerate(sample["steps"]) if st["kind"] == "kernel")
        bad = {}
        d = copy.deepcopy(sample)
        d["steps"][step]["opts"] = ["swizzle:0:4"]
        bad["unknown opt"] = d
        d = copy.deepcopy(sample)
        d["steps"][step]["launch_bounds"] = 256
        bad["unknown kernel-step field"] = d
        d = copy.deepcopy(sample)
        d["target"] = "ptx"
        for st in d["steps"]:
            st.pop("global", None)
            st.pop("local", None)
        bad["ptx step without its launch"] = d
        for what, doc in bad.items():
            if errors(validator, doc):
                passed += 1
            else:
                failed += 1
                print(f"FAIL the schema accepts a manifest with {what}")
    print("opt kinds seen: " + (", ".join(sorted(opts_seen)) or "none"))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
