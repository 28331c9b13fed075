#!/usr/bin/env python3
"""One process per device: every multi-device case of the given corpora (a case whose manifest has more than
one device) compiled with `uopc` (C target), run by `uopc-run` in one process, then under
`mpirun -np 1`, `-np 2` and `-np 4` (device d on process d % N; -np 3 too for 4 devices), and the written outputs compared
byte for byte with the one-process run's. One exception: a float allreduce step (add or mul) that MPI_Allreduce
combines in another order than one process does (more than two shards, or a rank holding several: docs/distributed.md)
may change the last bits; its case's outputs are then compared within the case's tolerance (rtol/atol of case.json)
and the line says so. A case of fewer than 4 devices must refuse `-np 4` before running (checked too). With
--exporter-models, the exporter's sharded model (sharded_2dev: its inputs.safetensors, --outputs) across 2
processes the same way. Each process must print its `rank R/N: devices ...` line (-v).

One line per run, then `N passed, M failed`. Exits 1 on any failure, 77 (skipped) without mpirun.
"""
import argparse
import array
import json
import os
import subprocess
import sys
import tempfile
import time


def last_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[-1]


def io_args(case_dir, case, manifest, tmp, tag):
    """uopc-run's --input/--output/--var arguments for a case, and the output files (per run `tag`)."""
    cmd, outs = [], []
    variables = dict(case.get("vars") or {})
    roles = {q["slot"]: q for q in manifest["params"]}
    for p in case["params"]:
        if p.get("kind") == "var":
            if "value" in p and p.get("name"):
                variables.setdefault(p["name"], p["value"])
            continue
        slot = p["slot"]
        if p.get("input"):
            cmd += ["--input", f"{slot}=" + ",".join(os.path.join(case_dir, x) for x in p["input"])]
        elif roles.get(slot, {}).get("role") == "inout":
            q = roles[slot]
            zeros = []
            for d in range(len(q["devices"])):
                zeros.append(os.path.join(tmp, f"slot{slot}.dev{d}.zero.bin"))
                with open(zeros[-1], "wb") as f:
                    f.write(bytes(q["bytes"]))
            cmd += ["--input", f"{slot}=" + ",".join(zeros)]
        if p.get("expected") and slot in roles:
            files = [os.path.join(tmp, f"{tag}.slot{slot}.dev{d}.bin") for d in range(len(roles[slot]["devices"]))]
            cmd += ["--output", f"{slot}=" + ",".join(files)]
            outs += files
    for name, value in sorted(variables.items()):
        cmd += ["--var", f"{name}={value}"]
    return cmd, outs


def same_files(a, b):
    for x, y in zip(a, b):
        with open(x, "rb") as f, open(y, "rb") as g:
            if f.read() != g.read():
                return f"{os.path.basename(y)} differs from the one-process run"
    return ""


def reorders(manifest, n):
    """Whether MPI_Allreduce on n processes may combine a float allreduce step's shards in another order than
    one process (device order, or tinygrad's ring): more than two shards, or two on one process."""
    for s in manifest["steps"]:
        if s["kind"] != "allreduce" or s["op"] == "max" or not s["dtype"].startswith("float"):
            continue
        names = [d["name"] for d in manifest["devices"]]
        ranks = {names.index(name) % n for name in s["devices"]}
        if len(s["devices"]) > 2 or 1 < len(ranks) < len(s["devices"]):
            return True
    return False


def close_files(a, b, code, rtol, atol):
    """'' when the raw arrays of type `code` in the files a[i] and b[i] agree within rtol/atol"""
    for x, y in zip(a, b):
        u, v = array.array(code), array.array(code)
        with open(x, "rb") as f, open(y, "rb") as g:
            u.frombytes(f.read())
            v.frombytes(g.read())
        if len(u) != len(v) or any(abs(p - q) > atol + rtol * abs(p) for p, q in zip(u, v)):
            return f"{os.path.basename(y)} differs from the one-process run beyond rtol {rtol}, atol {atol}"
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--cache-dir", default="", help="XDG_CACHE_HOME for the compiled kernels")
    ap.add_argument("--exporter-models", default="", help="the exporter test's folder (sharded_2dev)")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("corpora", nargs="*")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.cache_dir:
        env["XDG_CACHE_HOME"] = args.cache_dir
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")  # (containers without ptrace rights)
    mpirun = [args.mpirun, "--allow-run-as-root", "--oversubscribe"]
    try:
        subprocess.run([args.mpirun, "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        print(f"SKIP corpus-mpi: no {args.mpirun}")
        return 77
    passed, failed, cases = 0, 0, 0
    t_start = time.time()

    def report(name, why):
        nonlocal passed, failed
        if why:
            failed += 1
            print(f"FAIL {name}: {why}", flush=True)
        else:
            passed += 1
            print(f"PASS {name}", flush=True)

    def runs(name, manifest_path, ndev, base_cmd, outs_of, tmp):
        """the one-process run, then mpirun -np 1, 2 (3) and 4, each compared with it"""
        one, outs1 = base_cmd("one")
        p = subprocess.run([args.uopc_run, manifest_path] + one, capture_output=True, text=True, env=env, timeout=args.timeout)
        if p.returncode != 0:
            return report(f"{name} one process", f"uopc-run exit {p.returncode}: {last_line(p.stderr)}")
        report(f"{name} one process", "")
        for n in (1, 2, 3, 4) if ndev >= 4 else (1, 2, 4):  # (3: a count that does not divide the devices)
            extra, outs = base_cmd(f"np{n}")
            p = subprocess.run(mpirun + ["-np", str(n), args.uopc_run, manifest_path, "-v"] + extra, capture_output=True,
                               text=True, env=env, timeout=args.timeout)
            if n > ndev:
                ok = p.returncode != 0 and "may be at most" in p.stderr
                report(f"{name} np={n} refused", "" if ok else f"not refused (exit {p.returncode}): {last_line(p.stderr)}")
                continue
            if p.returncode != 0:
                report(f"{name} np={n}", f"exit {p.returncode}: {last_line(p.stderr)}")
                continue
            missing = [r for r in range(n) if n > 1 and f"rank {r}/{n}: devices " not in p.stdout]
            why = f"no 'rank R/{n}: devices' line from rank(s) {missing}" if missing else outs_of(outs1, outs, n)
            report(f"{name} np={n}" + (" (within tolerance: MPI_Allreduce's order)" if why == "tol" else ""), "" if why == "tol" else why)

    for corpus in args.corpora:
        for part in ("public", "perf"):
            root = os.path.join(corpus, part)
            if not os.path.isdir(root):
                continue
            for case_name in sorted(os.listdir(root)):
                case_dir = os.path.join(root, case_name)
                case_json, graph = os.path.join(case_dir, "case.json"), os.path.join(case_dir, "graph.json")
                if not os.path.isfile(case_json) or "CPU:1" not in open(graph).read():
                    continue  # (a single-device graph names no second device; the manifest below decides)
                name = f"{os.path.basename(os.path.normpath(corpus))}/{part}/{case_name}"
                with tempfile.TemporaryDirectory(prefix="uopc-mpi-") as tmp:
                    out = os.path.join(tmp, "out")
                    p = subprocess.run([args.uopc, graph, "-o", out], capture_output=True, text=True, env=env)
                    if p.returncode != 0:
                        report(name, f"uopc exit {p.returncode}: {last_line(p.stderr)}")
                        continue
                    mpath = os.path.join(out, "manifest.json")
                    manifest = json.load(open(mpath))
                    if len(manifest["devices"]) < 2:
                        continue
                    cases += 1
                    case = json.load(open(case_json))
                    tol = case.get("tolerance") or {}
                    dtypes = {q["dtype"] for q in manifest["params"]}

                    def compare(a, b, n, manifest=manifest, tol=tol, dtypes=dtypes):
                        why = same_files(a, b)
                        if not why or not reorders(manifest, n) or dtypes - {"float32", "float64"}:
                            return why
                        code = "f" if dtypes == {"float32"} else "d" if dtypes == {"float64"} else ""
                        if not code:
                            return why
                        return close_files(a, b, code, tol.get("rtol", 0.0), tol.get("atol", 0.0)) or "tol"

                    runs(name, mpath, len(manifest["devices"]), lambda tag: io_args(case_dir, case, manifest, tmp, tag),
                         compare, tmp)
    sharded = os.path.join(args.exporter_models, "sharded_2dev") if args.exporter_models else ""
    if sharded and os.path.isfile(os.path.join(sharded, "graph.json")):
        with tempfile.TemporaryDirectory(prefix="uopc-mpi-") as tmp:
            out = os.path.join(tmp, "out")
            p = subprocess.run([args.uopc, os.path.join(sharded, "graph.json"), "-o", out], capture_output=True, text=True, env=env)
            if p.returncode != 0:
                report("exporter/sharded_2dev", f"uopc exit {p.returncode}: {last_line(p.stderr)}")
            else:
                cases += 1
                inputs = os.path.join(sharded, "inputs.safetensors")
                base = lambda tag: (["--inputs", inputs, "--outputs", os.path.join(tmp, f"{tag}.safetensors")],
                                    [os.path.join(tmp, f"{tag}.safetensors")])
                runs("exporter/sharded_2dev", os.path.join(out, "manifest.json"), 2, base, lambda a, b, n: same_files(a, b), tmp)
    else:
        print(f"SKIP exporter/sharded_2dev: no exported model at '{sharded}' (the exporter test makes it)")
    print(f"{passed} passed, {failed} failed ({cases} multi-device cases, {time.time() - t_start:.1f} s)")
    return 1 if failed or cases == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
