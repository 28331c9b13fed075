"""check_keeps.py MANIFEST SLOT BEFORE AFTER: checks a run against the manifest's `keeps` of parameter SLOT
(device 0): every element it lists holds its value from BEFORE in AFTER, every other element changed
(the test's inputs make every written value differ from the one it replaces). Raw float32 files."""
import json, struct, sys

manifest, slot, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
param = next(p for p in json.load(open(manifest))["params"] if p["slot"] == slot)
keeps = param["keeps"][0]
kept = set()
for r in keeps["runs"]:
    for k in range(r["count"]):
        kept.update(range(r["start"] + k * r["stride"], r["start"] + k * r["stride"] + r["length"]))
read = lambda f: struct.unpack(f"<{param['numel']}f", open(f, "rb").read())
old, new = read(before), read(after)
bad = [i for i in range(param["numel"]) if (old[i] == new[i]) != (i in kept)]
if len(kept) != keeps["elements"] or bad:
    sys.exit(f"keeps is wrong: {len(kept)} elements listed, {keeps['elements']} counted; elements {bad} disagree")
print(f"keeps: {len(kept)} elements kept, {param['numel'] - len(kept)} written")
