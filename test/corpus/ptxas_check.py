#!/usr/bin/env python3
"""Every PTX kernel of every corpus case is accepted by CUDA's assembler: for each case,
`uopc graph.json -o OUT --target ptx`, then `ptxas -arch=ARCH` on each OUT/kernels/*/*.ptx.

One line per case (PASS with its kernel count, or FAIL with ptxas's or uopc's message), then
`N passed, M failed (K kernels assembled)`. Exits 1 on any failure. Without ptxas (no CUDA toolkit: a plain
Debian machine) or without a corpus it prints a visible SKIP line and exits 77, which ctest reports as
skipped, never as passed.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

SKIP = 77


def check_case(case_dir: str, args) -> tuple:
    graph = os.path.join(case_dir, "graph.json")
    with tempfile.TemporaryDirectory(prefix="uopc-ptxas-") as tmp:
        out = os.path.join(tmp, "out")
        proc = subprocess.run([args.uopc, graph, "-o", out, "--target", "ptx", "--gpu-arch", args.gpu_arch],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return "FAIL", 0, "uopc: " + (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        files = sorted(glob.glob(os.path.join(out, "kernels", "*", "*.ptx")))
        for f in files:
            asm = subprocess.run([args.ptxas, f"-arch={args.arch}", f, "-o", os.devnull], capture_output=True, text=True)
            if asm.returncode != 0:
                msg = (asm.stderr.strip().splitlines() or ["(no message)"])[0]
                return "FAIL", len(files), f"{os.path.relpath(f, out)}: {msg}"
        return "PASS", len(files), ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", default=os.environ.get("UOPC_CORPUS", ""))
    ap.add_argument("--ptxas", default=os.environ.get("UOPC_PTXAS", "/usr/local/cuda/bin/ptxas"))
    ap.add_argument("--arch", default="sm_90", help="ptxas -arch (default sm_90)")
    ap.add_argument("--gpu-arch", default="sm_80", help="uopc --gpu-arch (default sm_80)")
    ap.add_argument("--perf", action="store_true", help="also the perf set")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    if not (os.path.isfile(args.ptxas) or shutil.which(args.ptxas)):
        print(f"SKIP ptxas: no CUDA assembler at '{args.ptxas}' (install the CUDA toolkit or set UOPC_PTXAS)")
        return SKIP
    if not args.corpus or not os.path.isdir(args.corpus):
        print(f"SKIP ptxas: no corpus at '{args.corpus}'")
        return SKIP
    cases = []
    for s in ["public"] + (["perf"] if args.perf else []):
        root = os.path.join(args.corpus, s)
        if os.path.isdir(root):
            cases += [(f"{s}/{n}", os.path.join(root, n)) for n in sorted(os.listdir(root))
                      if os.path.isfile(os.path.join(root, n, "graph.json"))]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: check_case(c[1], args), cases))
    failed = kernels = 0
    for (name, _), (status, n, why) in zip(cases, results):
        kernels += n
        failed += status == "FAIL"
        print(f"{status} {name} ({n} kernels)" + (f": {why}" if why else ""))
    print(f"{len(cases) - failed} passed, {failed} failed ({kernels} kernels, ptxas -arch={args.arch})")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
