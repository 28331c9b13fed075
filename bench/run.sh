#!/usr/bin/env bash
# Runs every benchmark and prints its figures. Usage: bench/run.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CORPUS=${UOPC_CORPUS:-../shared/corpus}
for b in "$BUILD"/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --corpus "$CORPUS"
done
for target in c llvm ptx; do
  echo "== compile time against tinygrad (schedule_s + codegen_s), --target $target"
  /usr/bin/python3 bench/compile_vs_tinygrad.py --uopc "$BUILD/uopc" --corpus "$CORPUS" --target "$target"
done
echo "== rangeify scaling (generated elementwise chains)"
/usr/bin/python3 bench/rangeify_scaling.py --uopc "$BUILD/uopc"
