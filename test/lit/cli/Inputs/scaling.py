"""scaling.py UOPC GEN SMALL LARGE MAX_RATIO [uopc flags...]: generates graphs of SMALL and LARGE sizes with
GEN (a generator script taking SIZE OUT.json), compiles each (best of 2 wall-clock runs) and fails when the
large one takes more than MAX_RATIO times the small one's time, i.e. when the compile is clearly
super-linear (a linear compile gives about LARGE/SMALL; a quadratic one its square)."""
import os, subprocess, sys, tempfile, time

uopc, gen, small, large, max_ratio = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
flags = sys.argv[6:]
with tempfile.TemporaryDirectory() as d:
    def best(n):
        g = os.path.join(d, f"g{n}.json")
        subprocess.run([sys.executable, gen, str(n), g], check=True)
        t = None
        for k in range(2):
            t0 = time.perf_counter()
            subprocess.run([uopc, g, "-o", os.path.join(d, f"out{n}"), *flags], check=True)
            dt = time.perf_counter() - t0
            t = dt if t is None else min(t, dt)
        return t
    ts, tl = best(small), best(large)
ratio = tl / max(ts, 1e-6)
print(f"{small}: {ts:.3f} s, {large}: {tl:.3f} s, ratio {ratio:.1f} (limit {max_ratio})")
sys.exit(0 if ratio <= max_ratio else 1)
