#!/usr/bin/env bash
# The installed uopc (issue 34): cmake --install into a staging root (DESTDIR), the prefix then moved elsewhere
# (nothing may point back into the build tree or the first prefix), --version from the installed tools, and a
# corpus case compiled and run by them alone, C and LLVM (the LLVM plugin found in ../lib/uopc from bin/),
# checked against tinygrad's bytes. Usage: install_test.sh BUILD CORPUS_CASE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
CASE=$(cd "$2" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
DESTDIR="$WORK/stage" cmake --install "$BUILD" --prefix /opt/uopc > "$WORK/install.log"
mv "$WORK/stage/opt/uopc" "$WORK/moved"
P="$WORK/moved"
for f in bin/uopc bin/uopc-run lib/uopc/libuopc-llvm.so share/uopc/schemas/manifest.schema.json; do
  [ -e "$P/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
for t in uopc uopc-run; do
  v=$(env -u UOPC_LLVM_PLUGIN "$P/bin/$t" --version)
  echo "$v" | grep -q "^$t [0-9][0-9.]*" || { echo "FAIL: $t --version: $v"; exit 1; }
  echo "$v" | grep -q "^LLVM 19" || { echo "FAIL: $t --version names no LLVM 19: $v"; exit 1; }
  echo "$v" | grep -q "manifest format: version 1" || { echo "FAIL: $t --version names no manifest format: $v"; exit 1; }
done
# the case: inputs and expected bytes from its case.json
args=$(python3 - "$CASE" <<'PY'
import json, sys
case = sys.argv[1]
d = json.load(open(case + "/case.json"))
out = []
for p in d["params"]:
    if p.get("input"):
        out += ["--input", "%d=%s" % (p["slot"], ",".join(case + "/" + f for f in p["input"]))]
    if p.get("expected") and p["role"] == "output":
        out += ["--output", "%d=OUT%d" % (p["slot"], p["slot"])]
print(" ".join(out))
PY
)
for target in c llvm; do
  env -u UOPC_LLVM_PLUGIN "$P/bin/uopc" "$CASE/graph.json" -o "$WORK/out-$target" --target "$target"
  (cd "$WORK" && env -u UOPC_LLVM_PLUGIN XDG_CACHE_HOME="$WORK/cache" "$P/bin/uopc-run" "$WORK/out-$target/manifest.json" $args)
  python3 - "$CASE" "$WORK" "$target" <<'PY'
import json, struct, sys
case, work, target = sys.argv[1:]
d = json.load(open(case + "/case.json"))
tol = d.get("tolerance", {"rtol": 1e-4, "atol": 1e-5})
for p in d["params"]:
    if p["role"] != "output" or not p.get("expected"):
        continue
    want = open(case + "/" + p["expected"][0], "rb").read()
    got = open("%s/OUT%d" % (work, p["slot"]), "rb").read()
    assert len(got) == len(want), f"{target}: slot {p['slot']}: {len(got)} bytes, expected {len(want)}"
    n = len(want) // 4
    a, b = struct.unpack(f"<{n}f", got), struct.unpack(f"<{n}f", want)
    bad = [i for i in range(n) if abs(a[i] - b[i]) > tol["atol"] + tol["rtol"] * abs(b[i])]
    assert not bad, f"{target}: slot {p['slot']}: {len(bad)} of {n} elements differ"
print(f"{target}: matches tinygrad")
PY
done
echo "PASS: installed to a staging root, moved, --version and $(basename "$CASE") on C and LLVM"
