"""Work amplification: no kernel split may compute much more than the graph asks.

For every graph of the given corpora (`public/`, `perf/` case directories, or a flat directory of cases such
as ../shared/perf-run/cases), `uopc GRAPH -o TMP --stats` prints the work model of every kernel step (ALU
operations on data, index arithmetic excluded: lib/IR/Work.h) and the work of the tensor-level graph with every
data operation evaluated once per element (what the reference interpreter does). Their ratio is the case's
amplification; above --limit (1.5 by default) the case fails, naming its heaviest kernel and the operation in
it executed most often. Prints one line per case, then the worst case per corpus, and exits 1 on a failure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(.*)$")
TOTAL = re.compile(r"^total\s+(\d+)")
TENSOR = re.compile(r"^tensor-level ops \(each data op once per element\): (\d+)")


def cases_of(root):
    """(name, graph path) for every case under root: its public/ and perf/ sets, or root's own subdirectories."""
    sets = [s for s in ("public", "perf") if os.path.isdir(os.path.join(root, s))]
    dirs = [(f"{s}/{n}", os.path.join(root, s, n)) for s in sets for n in sorted(os.listdir(os.path.join(root, s)))] \
        if sets else [(n, os.path.join(root, n)) for n in sorted(os.listdir(root))]
    return [(n, os.path.join(d, "graph.json")) for n, d in dirs if os.path.isfile(os.path.join(d, "graph.json"))]


def measure(uopc, graph, flags):
    with tempfile.TemporaryDirectory(prefix="uopc-work-") as tmp:
        p = subprocess.run([uopc, graph, "-o", os.path.join(tmp, "out"), "--stats"] + flags,
                           capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None, f"uopc exit {p.returncode}: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    kernels, total, tensor = [], None, None
    for line in p.stdout.splitlines():
        if m := ROW.match(line):
            kernels.append((int(m.group(4)), m.group(2), m.group(5).strip()))
        elif m := TOTAL.match(line):
            total = int(m.group(1))
        elif m := TENSOR.match(line):
            tensor = int(m.group(1))
    if total is None or tensor is None:
        return None, "no constant totals in --stats (a symbolic size?)"
    return (total, tensor, max(kernels) if kernels else None), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", action="append", default=[], help="a corpus directory (repeatable)")
    ap.add_argument("--limit", type=float, default=1.5)
    ap.add_argument("--uopc-flag", action="append", default=[])
    ap.add_argument("--xfail", action="append", default=[], metavar="CASE=REASON",
                    help="a case known to exceed the limit, with the reason (it must still exceed it)")
    a = ap.parse_args()
    failed, ran = 0, 0
    worst = []
    xfail = dict(x.split("=", 1) for x in a.xfail)
    for root in a.corpus:
        if not os.path.isdir(root):
            print(f"SKIP {root}: no such directory")
            continue
        best = None
        for name, graph in cases_of(root):
            r, why = measure(a.uopc, graph, a.uopc_flag)
            if r is None:
                # symbolic sizes have no single ratio; any other failure to compile is a failure here
                status = "SKIP" if "symbolic" in why else "FAIL"
                failed += status == "FAIL"
                print(f"{status} {name}: {why}")
                continue
            ran += 1
            total, tensor, heavy = r
            ratio = total / tensor if tensor else (1.0 if total == 0 else float("inf"))
            ok = ratio <= a.limit
            detail = f"kernels {total} ops, tensor graph {tensor}: {ratio:.3f}x"
            if not ok and heavy:
                detail += f"; heaviest kernel {heavy[1]} ({heavy[0]} ops), its most executed op {heavy[2]}"
            short = name.split("/")[-1]
            if short in xfail:
                # a known excess must stay known: when it goes away, the list must shrink
                status = "XFAIL" if not ok else "XPASS"
                failed += ok
                print(f"{status} {name}: {detail} ({xfail[short]})" + ("; remove it from --xfail" if ok else ""))
                continue
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
            if short not in xfail and (best is None or ratio > best[0]):
                best = (ratio, name, total, tensor)
        if best:
            worst.append((root, best))
    print("worst case per corpus:")
    for root, (ratio, name, total, tensor) in worst:
        print(f"  {root}: {name} {ratio:.3f}x ({total} / {tensor})")
    print(f"{ran - failed if failed <= ran else 0} passed, {failed} failed (limit {a.limit}x)")
    if ran == 0:
        print("error: no case ran", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
