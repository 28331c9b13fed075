"""poll-replace.py UOPC GRAPH OUT: compiles GRAPH into OUT 40 times while a thread polls OUT/manifest.json;
exits 1 if the poller ever found it missing (a replace that is not one atomic step)."""
import os, subprocess, sys, threading

uopc, graph, out = sys.argv[1:4]
subprocess.run([uopc, graph, "-o", out], check=True)
manifest = os.path.join(out, "manifest.json")
stop, missing, polls = threading.Event(), [0], [0]

def poll():
    while not stop.is_set():
        polls[0] += 1
        if not os.path.exists(manifest):
            missing[0] += 1

t = threading.Thread(target=poll)
t.start()
try:
    for _ in range(40):
        subprocess.run([uopc, graph, "-o", out], check=True)
finally:
    stop.set()
    t.join()
print(f"{polls[0]} polls, manifest missing in {missing[0]}")
sys.exit(1 if missing[0] else 0)
