#!/usr/bin/env bash
# `make demo`: compiles the bundled example relu(2*x + y) and runs it, printing its result.
# The C/LLVM/PTX backends are not written yet (issues 6 and 7): until they are, the demo compiles the
# graph through the current pipeline (--emit graph) and runs it with the reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
EX=examples/axpy
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "== uopc $EX/graph.json -o $OUT/axpy --emit graph --time-passes"
"$BUILD/uopc" "$EX/graph.json" -o "$OUT/axpy" --emit graph --time-passes
echo "== uopc convert (JSON -> .uopb -> JSON round trip)"
"$BUILD/uopc" convert "$EX/graph.json" -o "$OUT/axpy.uopb"
"$BUILD/uopc" convert "$OUT/axpy.uopb" -o "$OUT/axpy.json"
echo "   $(stat -c %s "$EX/graph.json") bytes of JSON, $(stat -c %s "$OUT/axpy.uopb") bytes of .uopb"

if [ -x "$BUILD/uopc-run" ]; then
  echo "== uopc-run --interpret: out = relu(2*x + y)"
  "$BUILD/uopc-run" --interpret "$EX/graph.json" --input "1=$EX/x.bin" --input "2=$EX/y.bin" --output "0=$OUT/out.bin"
  /usr/bin/python3 - "$EX/x.bin" "$EX/y.bin" "$OUT/out.bin" <<'PY'
import struct, sys
x, y, out = (struct.unpack("<8f", open(p, "rb").read()) for p in sys.argv[1:4])
print("   x   =", list(x)); print("   y   =", list(y)); print("   out =", list(out))
PY
else
  echo "(uopc-run is not built: nothing to run)"
fi
