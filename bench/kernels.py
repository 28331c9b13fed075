"""How fast uopc's kernels run against tinygrad's own, on ../shared/perf-run (realistic sizes).

For every case: `uopc graph.json -o OUT --target c|llvm`, one checked run through `uopc-run` (the outputs must
match tinygrad's expected bytes within the case's tolerance), then --rounds rounds, each alternating tinygrad
(perf-run's bench_tinygrad.py: its kernels only, compile excluded, best of --reps) with `uopc-run --bench`
(C, then LLVM; best of --reps). The machine is shared and absolute times move 2x from minute to minute, so each
round's ratio (tinygrad time / uopc time, above 1 = uopc faster) compares measurements taken seconds apart;
the table shows each case's best times and its median ratio, then the geometric means.

Inputs: perf-run's gen.py writes each case's graph, inputs and tinygrad's outputs (up to 64 MB a file), into
--data (default $UOPC_PERF_DATA, else ~/.cache/uopc-perf-run), outside the repository; missing cases are
generated there with perf-run/gen-all.sh. tinygrad: a d1c3ae0f91 checkout (--tinygrad or $UOPC_TINYGRAD;
see README). Without one, the script says so and exits 0 (a visible skip: there is nothing to compare with).
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "corpus"))
from run_interpret import compare  # noqa: E402  (the corpus drivers' comparison of buffers)

TOTAL = re.compile(r"total: mean ([0-9.]+) us, min ([0-9.]+) us")


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ...: exit {p.returncode}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return p.stdout


class Case:
    def __init__(self, name, case_dir, out_root, args):
        self.name, self.dir, self.args = name, case_dir, args
        with open(os.path.join(case_dir, "case.json")) as f:
            self.case = json.load(f)
        self.out = {t: os.path.join(out_root, f"{name}.{t}") for t in args.targets}

    def io(self, tmp):
        """uopc-run's --input/--output/--var flags, and (param, files) to compare."""
        flags, outputs = [], []
        for p in self.case["params"]:
            if p.get("kind") == "var":
                continue
            slot = p["slot"]
            if p.get("input"):
                flags += ["--input", f"{slot}=" + ",".join(os.path.join(self.dir, x) for x in p["input"])]
            if p.get("expected"):
                files = [os.path.join(tmp, f"{self.name}.slot{slot}.dev{d}.bin") for d in range(len(p["expected"]))]
                flags += ["--output", f"{slot}=" + ",".join(files)]
                outputs.append((p, files))
        for name, value in sorted((self.case.get("vars") or {}).items()):
            flags += ["--var", f"{name}={value}"]
        return flags, outputs

    def compile_and_check(self, target, tmp):
        run([self.args.uopc, os.path.join(self.dir, "graph.json"), "-o", self.out[target], "--target", target])
        flags, outputs = self.io(tmp)
        run([self.args.uopc_run, os.path.join(self.out[target], "manifest.json")] + flags)
        tol = self.case.get("tolerance") or {}
        for p, files in outputs:
            for mine, want in zip(files, p["expected"]):
                with open(mine, "rb") as f, open(os.path.join(self.dir, want), "rb") as g:
                    why = compare(f.read(), g.read(), p["dtype"], float(tol.get("rtol", 0)), float(tol.get("atol", 0)))
                if why:
                    return f"slot {p['slot']}: {why}"
        return ""

    def uopc_ms(self, target, tmp):
        flags, _ = self.io(tmp)
        text = run([self.args.uopc_run, os.path.join(self.out[target], "manifest.json"), "--bench", str(self.args.reps)] + flags)
        m = TOTAL.search(text)
        if not m:
            raise RuntimeError("uopc-run --bench printed no total")
        return float(m.group(2)) / 1e3

    def tinygrad_ms(self):
        env = dict(os.environ, DEV="CPU", PYTHONPATH=f"{self.args.tinygrad}:{self.args.perf_run}")
        text = run([sys.executable, os.path.join(self.args.perf_run, "bench_tinygrad.py"), self.name,
                    "--reps", str(self.args.reps)], env=env)
        return float(json.loads(text.strip().splitlines()[-1])["tinygrad_ms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--uopc-run", required=True)
    ap.add_argument("--perf-run", default=os.path.join(HERE, "..", "..", "shared", "perf-run"))
    ap.add_argument("--data", default=os.environ.get("UOPC_PERF_DATA", os.path.expanduser("~/.cache/uopc-perf-run")))
    ap.add_argument("--tinygrad", default=os.environ.get("UOPC_TINYGRAD", ""), help="a tinygrad d1c3ae0f91 checkout")
    ap.add_argument("--cases", nargs="*", default=[], help="case names (default: every case of perf-run/cases.py)")
    ap.add_argument("--targets", nargs="*", default=["c", "llvm"], choices=["c", "llvm"])
    ap.add_argument("--reps", type=int, default=5, help="best of this many runs per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per case")
    ap.add_argument("--quick", action="store_true", help="one small case, one round, one repetition")
    a = ap.parse_args()
    a.perf_run = os.path.abspath(a.perf_run)
    if a.quick:
        a.cases, a.reps, a.rounds = a.cases or ["sp_ew_fma_16m"], 1, 1
    if not a.tinygrad or not os.path.isdir(os.path.join(a.tinygrad, "tinygrad")):
        print("SKIP bench/kernels: no tinygrad d1c3ae0f91 checkout (pass --tinygrad DIR or set UOPC_TINYGRAD): "
              "nothing to compare uopc's kernels with")
        return 0
    a.tinygrad = os.path.abspath(a.tinygrad)
    names = a.cases or re.findall(r'^@case\("([a-z0-9_]+)"', open(os.path.join(a.perf_run, "cases.py")).read(), re.M)
    missing = [n for n in names if not os.path.isfile(os.path.join(a.data, n, "case.json"))]
    if missing:
        print(f"generating {len(missing)} case(s) into {a.data} (perf-run/gen-all.sh) ...", flush=True)
        subprocess.run([os.path.join(a.perf_run, "gen-all.sh"), a.tinygrad, a.data] + missing, check=True)
    rows, failed = [], 0
    triad = []  # (uopc c ms, uopc llvm ms, triad ms) per round of sp_ew_fma_16m
    with tempfile.TemporaryDirectory(prefix="uopc-bench-kernels-") as tmp:
        triad_exe = None
        if "sp_ew_fma_16m" in names:  # the bandwidth reference: gcc -O3's triad, as many threads as uopc-run
            triad_exe = os.path.join(tmp, "triad")
            subprocess.run(["gcc", "-O3", "-march=native", "-std=c11", "-pthread", "-o", triad_exe,
                            os.path.join(HERE, "triad.c")], check=True)
        for name in names:
            c = Case(name, os.path.join(a.data, name), tmp, a)
            try:
                bad = {t: c.compile_and_check(t, tmp) for t in a.targets}
                for t, why in bad.items():
                    if why:
                        failed += 1
                        print(f"MISMATCH {name} --target {t}: {why}")
                times = {"tinygrad": []} | {t: [] for t in a.targets}
                ratios = {t: [] for t in a.targets}
                for _ in range(a.rounds):
                    tg = c.tinygrad_ms()
                    times["tinygrad"].append(tg)
                    for t in a.targets:
                        ms = c.uopc_ms(t, tmp)
                        times[t].append(ms)
                        ratios[t].append(tg / ms if ms > 0 else float("inf"))
                    if name == "sp_ew_fma_16m" and triad_exe:
                        tri = float(run([triad_exe, str(16 << 20), str(os.cpu_count() or 1), str(a.reps)]).strip())
                        triad.append(({t: times[t][-1] for t in a.targets}, tri))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                failed += 1
                print(f"FAIL {name}: {e}")
                continue
            row = {"case": name, "tinygrad": min(times["tinygrad"])}
            for t in a.targets:
                row[t] = min(times[t])
                row[t + "_ratio"] = statistics.median(ratios[t])
            rows.append(row)
            print(f"{name}: tinygrad {row['tinygrad']:.2f} ms, " +
                  ", ".join(f"{t} {row[t]:.2f} ms (ratio {row[t + '_ratio']:.2f})" for t in a.targets), flush=True)
    if rows:
        head = "| case | tinygrad ms | " + " | ".join(f"uopc {t} ms" for t in a.targets) + " | " + \
               " | ".join(f"{t} ratio" for t in a.targets) + " |"
        print("\nratio = tinygrad time / uopc time (median of the alternating rounds; above 1 = uopc faster)\n")
        print(head)
        print("|" + "---|" * (2 + 2 * len(a.targets)))
        for r in rows:
            print(f"| {r['case']} | {r['tinygrad']:.2f} | " + " | ".join(f"{r[t]:.2f}" for t in a.targets) + " | " +
                  " | ".join(f"{r[t + '_ratio']:.2f}" for t in a.targets) + " |")
        for t in a.targets:
            g = math.exp(sum(math.log(r[t + "_ratio"]) for r in rows) / len(rows))
            print(f"geometric mean ratio, {t}: {g:.2f} over {len(rows)} case(s)")
    if triad:  # 4 arrays of 16M float32s move per run
        gbs = lambda ms: 4 * (16 << 20) * 4 / (ms * 1e-3) / 1e9
        tri = min(x[1] for x in triad)
        print(f"\nsp_ew_fma_16m against gcc -O3's triad ({os.cpu_count()} threads, the same run): triad {tri:.2f} ms "
              f"({gbs(tri):.1f} GB/s); " + ", ".join(
                  f"{t} {min(x[0][t] for x in triad):.2f} ms ({gbs(min(x[0][t] for x in triad)):.1f} GB/s, "
                  f"{100 * tri / min(x[0][t] for x in triad):.0f}% of the triad)" for t in a.targets))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
