#!/usr/bin/env python3
"""A graph too deep for one C function (issue 14), end to end; prints figures, fails on a wrong result.

Generates an elementwise chain of N float32 ops on 4 elements (each step adds or subtracts 1 at random:
test/lit/passes/Inputs/kernel-split-deep-chain.py --mixed, so the kernels it is cut into differ), compiles
it with `uopc --target c` (rangeify bounds every kernel at max-kernel-ops, default 20,000 ops), runs it
with `uopc-run` from an empty kernel cache (the C compiler builds every kernel: one cc invocation), then
again from the warm cache (no compiler), and checks the output against the chain's sum. Wall time and
peak memory come from /usr/bin/time -v (the first run's peak includes the compiler's cc1). Usage:
  bench/deep_chain.py [--uopc build/uopc] [--uopc-run build/uopc-run] [--ops 1000000] [--plain]
--plain: every step adds 1 (every cut kernel is the same: one C file). About 4 minutes for 1,000,000 ops
on a loaded 2-core machine; not part of the test suite (test/lit/targets/c-deep-chain-split.test is 50,000).
"""
import argparse, os, re, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "test", "lit", "passes", "Inputs", "kernel-split-deep-chain.py")

def timed(cmd, env=None):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"deep_chain: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", r.stderr).group(1)
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return secs, rss / 1024, r.stdout

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uopc", default=os.path.join(HERE, "..", "build", "uopc"))
    ap.add_argument("--uopc-run", default=os.path.join(HERE, "..", "build", "uopc-run"))
    ap.add_argument("--ops", type=int, default=1000000)
    ap.add_argument("--plain", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        g = os.path.join(d, "chain.json")
        gen = subprocess.run([sys.executable, GEN, str(a.ops), g] + ([] if a.plain else ["--mixed"]),
                             capture_output=True, text=True, check=True)
        total = a.ops if a.plain else int(gen.stdout)
        out = os.path.join(d, "out")
        t, m, stats = timed([a.uopc, g, "-o", out, "--target", "c", "--stats"])
        steps = [l.split() for l in stats.splitlines() if l[:1].isdigit()]
        files = sorted(os.listdir(os.path.join(out, "kernels", "CPU")))
        csize = sum(os.path.getsize(os.path.join(out, "kernels", "CPU", f)) for f in files)
        print(f"chain of {a.ops} ops: uopc --target c {t:.1f} s, peak {m:.0f} MiB; {len(steps)} kernel steps, "
              f"{len(files)} C files ({csize / 2**20:.1f} MiB), largest step {max(int(s[3]) for s in steps) // 4} ops")
        inp, res = os.path.join(d, "in.bin"), os.path.join(d, "res.bin")
        with open(inp, "wb") as f: f.write(struct.pack("<4f", 1, 2, 3, 4))
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"))
        run = [a.uopc_run, os.path.join(out, "manifest.json"), "--input", "1=" + inp, "--output", "0=" + res]
        t1, m1, _ = timed(run, env)
        t2, m2, _ = timed(run, env)
        print(f"uopc-run, cold cache (cc -O3 builds every kernel): {t1:.1f} s, peak {m1:.0f} MiB; "
              f"warm cache: {t2:.1f} s, peak {m2:.0f} MiB")
        got = struct.unpack("<4f", open(res, "rb").read())
        want = tuple(float(x + total) for x in (1, 2, 3, 4))
        print(f"output {got}, expected {want}: {'correct' if got == want else 'WRONG'}")
        if got != want: sys.exit(1)

if __name__ == "__main__":
    main()
