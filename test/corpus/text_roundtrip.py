#!/usr/bin/env python3
"""The text form reads back: for corpus cases, every pass's text dump (--dump-dir --print-ir-format=text).

Per case and pass NN-<pass>.txt:
  - read back and printed again (uopc convert NN.txt -o r.txt) it is the same bytes;
  - read back and written as JSON (uopc convert NN.txt -o r.json) it is the JSON dump of the same pass, byte for
    byte (so nothing of the graph was lost: the JSON writer's order and spelling are a function of the graph);
and compiling from the rangeify dump's text with the rest of the default pipeline writes the same kernels and
manifest as compiling from its JSON dump.
"""
import argparse, filecmp, os, subprocess, sys, tempfile


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]


def same_tree(a, b):
    """Relative paths of the files that differ (or exist on one side only)."""
    def files(root):
        out = set()
        for d, _, fs in os.walk(root):
            out.update(os.path.relpath(os.path.join(d, f), root) for f in fs)
        return out
    fa, fb = files(a), files(b)
    bad = sorted(fa ^ fb)
    bad += [f for f in sorted(fa & fb) if not filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False)]
    return bad


def check_case(uopc, graph, tail, work):
    fails = []
    txt, js = os.path.join(work, "txt"), os.path.join(work, "json")
    rc, err = run([uopc, graph, "-o", os.path.join(work, "o1"), "--emit", "graph", "--dump-dir", txt, "--print-ir-format=text"])
    if rc: return ["text dump: " + err], 0
    rc, err = run([uopc, graph, "-o", os.path.join(work, "o2"), "--emit", "graph", "--dump-dir", js])
    if rc: return ["json dump: " + err], 0
    dumps = sorted(f for f in os.listdir(txt) if f.endswith(".txt"))
    for f in dumps:
        src = os.path.join(txt, f)
        back_txt, back_json = os.path.join(work, "r.txt"), os.path.join(work, "r.json")
        rc, err = run([uopc, "convert", src, "-o", back_txt])
        if rc:
            fails.append(f"{f}: read back: {err}")
            continue
        if not filecmp.cmp(src, back_txt, shallow=False): fails.append(f"{f}: printed again, the text differs")
        rc, err = run([uopc, "convert", src, "-o", back_json])
        if rc: fails.append(f"{f}: to JSON: {err}")
        elif not filecmp.cmp(back_json, os.path.join(js, f[:-4] + ".json"), shallow=False):
            fails.append(f"{f}: read back, the JSON differs from the JSON dump")
    rangeify = [f for f in dumps if f.endswith("-rangeify.txt")]
    if not rangeify: fails.append("no rangeify dump")
    else:
        r = rangeify[0][:-4]
        k1, k2 = os.path.join(work, "k-txt"), os.path.join(work, "k-json")
        rc1, e1 = run([uopc, os.path.join(txt, r + ".txt"), "-o", k1, "--pass-pipeline", tail])
        rc2, e2 = run([uopc, os.path.join(js, r + ".json"), "-o", k2, "--pass-pipeline", tail])
        if rc1 or rc2: fails.append(f"compile after rangeify: text: {e1 if rc1 else 'ok'}; json: {e2 if rc2 else 'ok'}")
        else:
            diff = same_tree(k1, k2)
            if diff: fails.append("compiled from the rangeify text, these differ: " + ", ".join(diff[:5]))
    return fails, len(dumps)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--uopc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--set", default="public")
    ap.add_argument("--case", action="append", help="only these cases (default: every case of the set)")
    a = ap.parse_args()
    root = os.path.join(a.corpus, a.set)
    if not os.path.isdir(root):
        print(f"SKIP text-roundtrip: no corpus at '{root}'")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    listed = subprocess.run([a.uopc, "--list-passes"], capture_output=True, text=True, check=True).stdout.splitlines()
    default = [l.split("\t")[0] for l in listed if "(not in the default pipeline)" not in l]
    tail = ",".join(default[default.index("rangeify") + 1:])
    cases = a.case or sorted(c for c in os.listdir(root) if os.path.exists(os.path.join(root, c, "graph.json")))
    passed = failed = dumps = 0
    for case in cases:
        with tempfile.TemporaryDirectory() as work:
            fails, n = check_case(a.uopc, os.path.join(root, case, "graph.json"), tail, work)
        dumps += n
        if fails:
            failed += 1
            for f in fails: print(f"FAIL {case}: {f}")
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed, 0 skipped ({dumps} text dumps read back)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
