#!/usr/bin/env python3
"""Regenerates the pass tests' text inputs (test/lit/passes/Inputs/*.uopir whose first line says how it was made:
"// The input of PASS (TEST): SOURCE after --pass-pipeline PREFIX,"), from the current build's uopc.

  python3 scripts/update_pass_inputs.py [BUILD_DIR]   (default build/; then review `git diff test/lit`)

SOURCE is a graph (relative to the repository; ../shared/... for the corpus) or "the graph python3 SCRIPT ARGS
writes". The rest of the file is what --dump-dir --print-ir-format=text writes after PREFIX's last pass."""
import glob, os, re, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
uopc = os.path.join(root, sys.argv[1] if len(sys.argv) > 1 else "build", "uopc")
head = re.compile(r"// The input of (\S+) \((\S+)\): (.*) after --pass-pipeline (\S+),$")
n = 0
for path in sorted(glob.glob(os.path.join(root, "test/lit/passes/Inputs/*.uopir"))):
    with open(path) as f:
        first, second = f.readline(), f.readline()
    m = head.match(first.rstrip("\n"))
    if not m:
        continue  # (written by hand)
    prefix, source = m.group(4), m.group(3)
    with tempfile.TemporaryDirectory() as t:
        g = re.match(r"the graph python3 (\S+) (.*) writes$", source)
        if g:
            graph = os.path.join(t, "graph.json")
            subprocess.run([sys.executable, os.path.join(root, g.group(1))] + g.group(2).split() + [graph], check=True)
        else:
            graph = os.path.join(root, source)
        subprocess.run([uopc, graph, "-o", os.path.join(t, "o"), "--emit", "graph", "--pass-pipeline", prefix,
                        "--dump-dir", os.path.join(t, "dump"), "--print-ir-format=text"], check=True, stdout=subprocess.DEVNULL)
        dump = sorted(glob.glob(os.path.join(t, "dump", "*.txt")))[-1]
        with open(dump) as f:
            text = f.read()
    with open(path, "w") as f:
        f.write(first + second + text)
    n += 1
print(f"{n} inputs regenerated")
