"""Helpers of tune.test.
  tune-db.py inputs X.bin W.bin            seeded float32 inputs of rangeify-work.py's mm1k8 (8x1024, 1024x1024)
  tune-db.py close REF.bin GOT.bin RTOL    exit 1 unless every float32 of GOT is within RTOL of REF's (relative
                                           to the element plus REF's largest magnitude)
  tune-db.py edit IN.json OUT.json K=V...  a tuning database with fields of its first entry set (V is JSON;
                                           K 'version' or 'format' sets the top level's)"""
import json, random, struct, sys

cmd = sys.argv[1]
if cmd == "inputs":
    r = random.Random(7)
    open(sys.argv[2], "wb").write(struct.pack("<8192f", *[r.uniform(-1, 1) for _ in range(8192)]))
    open(sys.argv[3], "wb").write(struct.pack("<1048576f", *[r.uniform(-1, 1) for _ in range(1 << 20)]))
elif cmd == "close":
    a, b = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
    if len(a) != len(b):
        sys.exit(f"sizes differ: {len(a)} against {len(b)} bytes")
    ref, got = struct.unpack(f"<{len(a) // 4}f", a), struct.unpack(f"<{len(b) // 4}f", b)
    rtol, scale = float(sys.argv[4]), max(abs(x) for x in ref)
    bad = [i for i, (x, y) in enumerate(zip(ref, got)) if abs(x - y) > rtol * (abs(x) + scale)]
    if bad:
        sys.exit(f"{len(bad)} elements differ, the first at {bad[0]}: {got[bad[0]]} against {ref[bad[0]]}")
    print(f"{len(ref)} elements within {rtol}")
elif cmd == "edit":
    db = json.load(open(sys.argv[2]))
    for kv in sys.argv[4:]:
        k, v = kv.split("=", 1)
        (db if k in ("version", "format") else db["entries"][0])[k] = json.loads(v)
    json.dump(db, open(sys.argv[3], "w"), indent=1)
else:
    sys.exit(__doc__)
