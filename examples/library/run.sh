#!/usr/bin/env bash
# The library example (a ctest): compiles examples/library/mlp (the exported MLP) into a C library with its
# weights baked in (mlp.c, and mlp_params.S, which takes them from mlp_params.bin), builds main.c against it
# with nothing but cc, runs it and compares what it prints with
# tinygrad's result for the same input (expected.txt, within 1e-5).
#   examples/library/run.sh UOPC [CC]
set -euo pipefail
UOPC=$1
CC=${2:-cc}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$UOPC" "$HERE/mlp/graph.json" -o "$OUT/lib" --emit library --embed-params "$HERE/mlp/inputs.safetensors"
(cd "$OUT/lib" && "$CC" -std=c11 -Wall -Werror -O2 -c mlp.c mlp_params.S)
"$CC" -std=c11 -Wall -Werror -O2 -I "$OUT/lib" "$HERE/main.c" "$OUT/lib/mlp.o" "$OUT/lib/mlp_params.o" -o "$OUT/mlp" -lm
"$OUT/mlp" | tee "$OUT/printed.txt"
/usr/bin/python3 - "$OUT/printed.txt" "$HERE/expected.txt" <<'PY'
import sys
got, want = ([[float(v) for v in line.split()] for line in open(p)] for p in sys.argv[1:3])
ok = len(got) == len(want) and all(len(g) == len(w) and all(abs(a - b) <= 1e-5 for a, b in zip(g, w)) for g, w in zip(got, want))
print("library example: " + ("matches tinygrad" if ok else f"differs from tinygrad: {want}"))
sys.exit(0 if ok else 1)
PY
